"""Models ``<vc>/<name>``: list, create, show, change, delete; versions (register, list, show,
delete), aliases and metric comparison."""

from fastapi import APIRouter, Path, Query, Response
from sqlalchemy import select

from ..core.authz import is_member
from ..core.errors import Refusal
from ..models import records as mr
from ..models.models import Model
from ..models.register import register
from ..models.schemas import (
    ModelAliasIn,
    ModelComparison,
    ModelIn,
    ModelOut,
    ModelPatch,
    ModelVersionIn,
    ModelVersionOut,
)
from ..models.views import compare, model_dict, one_version, versions_list
from ..vcs.models import VC
from .common import Caller, Ctx, as_person

router = APIRouter(prefix="/models", tags=["models"])
ALIAS = Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", description="letters, digits, '.', '_', '-'")
MAX_COMPARED = 32


@router.get("", response_model=list[ModelOut])
def list_models(caller: Caller, ctx: Ctx, vc: str | None = Query(None, max_length=32)) -> list[dict]:
    """Models of the VCs the caller belongs to (``?vc=`` filters)."""
    person = as_person(caller)
    with ctx.db.session() as s:
        mine = {v.name for v in s.scalars(select(VC)) if is_member(person, v.groups)}
        query = select(Model).order_by(Model.vc, Model.name)
        if vc is not None:
            query = query.where(Model.vc == vc)
        return [model_dict(s, m) for m in s.scalars(query) if m.vc in mine]


@router.post("", response_model=ModelOut, status_code=201)
def create_model(body: ModelIn, caller: Caller, ctx: Ctx) -> dict:
    """Members of ``vc``: create an empty model (and its backing dataset ``<vc>/model-<name>``)."""
    person = as_person(caller)
    with ctx.db.writing() as s:
        return model_dict(s, mr.create(s, person, body.vc, body.name, body.description))


@router.get("/{vc}/{name}", response_model=ModelOut)
def get_model(vc: str, name: str, caller: Caller, ctx: Ctx) -> dict:
    """One model with its version count, latest version and aliases (404 outside the caller's VCs)."""
    with ctx.db.session() as s:
        return model_dict(s, mr.visible(s, as_person(caller), vc, name))


@router.patch("/{vc}/{name}", response_model=ModelOut)
def patch_model(vc: str, name: str, body: ModelPatch, caller: Caller, ctx: Ctx) -> dict:
    """The owner or an admin: change the description."""
    person = as_person(caller)
    with ctx.db.writing() as s:
        m = mr.visible(s, person, vc, name)
        mr.require_owner(person, m, "change")
        if body.description is not None:
            m.description = body.description
        s.flush()
        return model_dict(s, m)


@router.delete("/{vc}/{name}", status_code=204)
def delete_model(vc: str, name: str, caller: Caller, ctx: Ctx) -> Response:
    """The owner or an admin: delete the model, its versions and its backing dataset."""
    person = as_person(caller)
    with ctx.db.writing() as s:
        m = mr.visible(s, person, vc, name)
        mr.require_owner(person, m, "delete")
        mr.delete_model(s, m)
    return Response(status_code=204)


@router.post("/{vc}/{name}/versions", response_model=ModelVersionOut, status_code=201)
def register_version(vc: str, name: str, body: ModelVersionIn, caller: Caller, ctx: Ctx) -> dict:
    """Members of the VC: register a version from uploaded files or a succeeded job's outputs
    (lineage from its ledger record). 409 when the files equal the latest version's."""
    jobs_dir = ctx.settings.data_dir.absolute() / "jobs"
    return register(ctx.storage, as_person(caller), vc, name, body, jobs_dir)


@router.get("/{vc}/{name}/versions", response_model=list[ModelVersionOut])
def list_versions(vc: str, name: str, caller: Caller, ctx: Ctx) -> list[dict]:
    """Versions, newest first, with metadata, lineage and aliases."""
    with ctx.db.session() as s:
        return versions_list(s, mr.visible(s, as_person(caller), vc, name))


@router.get("/{vc}/{name}/versions/{ref}", response_model=ModelVersionOut)
def get_version(vc: str, name: str, ref: str, caller: Caller, ctx: Ctx) -> dict:
    """One version; ``ref`` is a number, ``v<number>``, an alias or ``latest``."""
    with ctx.db.session() as s:
        m = mr.visible(s, as_person(caller), vc, name)
        return one_version(s, m, mr.resolve(s, m, ref))


@router.delete("/{vc}/{name}/versions/{ref}", status_code=204)
def delete_version(vc: str, name: str, ref: str, caller: Caller, ctx: Ctx) -> Response:
    """The owner or an admin: delete a version (and its aliases); GC reclaims its objects."""
    person = as_person(caller)
    with ctx.db.writing() as s:
        m = mr.visible(s, person, vc, name)
        mr.require_owner(person, m, "delete versions of")
        mr.delete_version(s, m, mr.resolve(s, m, ref))
    return Response(status_code=204)


def _alias_refusal(alias: str) -> None:
    if alias == "latest" or alias.isdigit() or (alias[:1] == "v" and alias[1:].isdigit()):
        raise Refusal(422, f"alias {alias!r} would be read as a version reference; choose another name")


@router.put("/{vc}/{name}/aliases/{alias}", response_model=ModelVersionOut)
def put_alias(vc: str, name: str, body: ModelAliasIn, caller: Caller, ctx: Ctx, alias: str = ALIAS) -> dict:
    """Members of the VC: point ``alias`` (``production``) at a version; it moves if it pointed elsewhere."""
    _alias_refusal(alias)
    person = as_person(caller)
    with ctx.db.writing() as s:
        m = mr.visible(s, person, vc, name)
        return one_version(s, m, mr.set_alias(s, m, alias, body.version))


@router.delete("/{vc}/{name}/aliases/{alias}", status_code=204)
def delete_alias(vc: str, name: str, caller: Caller, ctx: Ctx, alias: str = ALIAS) -> Response:
    """Members of the VC: remove an alias (the version stays)."""
    person = as_person(caller)
    with ctx.db.writing() as s:
        mr.delete_alias(s, mr.visible(s, person, vc, name), alias)
    return Response(status_code=204)


@router.get("/{vc}/{name}/compare", response_model=ModelComparison)
def compare_versions(
    vc: str,
    name: str,
    caller: Caller,
    ctx: Ctx,
    versions: str = Query("", max_length=1024, description="comma-separated refs; default: every version"),
) -> dict:
    """Versions' metrics side by side (at most 32 versions)."""
    refs = [r.strip() for r in versions.split(",") if r.strip()]
    if len(refs) > MAX_COMPARED:
        raise Refusal(422, f"versions: at most {MAX_COMPARED} versions are compared, not {len(refs)}")

    with ctx.db.session() as s:
        m = mr.visible(s, as_person(caller), vc, name)
        rows = [one_version(s, m, mr.resolve(s, m, r)) for r in refs] if refs else versions_list(s, m)
        return compare(mr.full_name(m), rows[:MAX_COMPARED])
