"""Datasets ``<vc>/<name>``: list, create, show, change, delete; tags."""

from fastapi import APIRouter, Path, Query, Response
from sqlalchemy import select

from ..core.authz import sees_dataset
from ..core.errors import Refusal
from ..datasets import records as ds
from ..datasets.models import Dataset
from ..datasets.quota import recount
from ..datasets.schemas import DatasetIn, DatasetOut, DatasetPatch, TagIn, VersionOut
from ..datasets.views import dataset_dict, one_version
from ..vcs.models import VC
from .common import Ctx, Member

router = APIRouter(prefix="/datasets", tags=["datasets"])
TAG = Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", description="letters, digits, '.', '_', '-'")


@router.get("", response_model=list[DatasetOut])
def list_datasets(person: Member, ctx: Ctx, vc: str | None = Query(None)) -> list[dict]:
    """Datasets the caller may see (``?vc=`` filters): VC members the shared ones, owners their private ones."""
    with ctx.db.session() as s:
        groups = {v.name: v.groups for v in s.scalars(select(VC))}
        query = select(Dataset).order_by(Dataset.vc, Dataset.name)
        if vc is not None:
            query = query.where(Dataset.vc == vc)
        return [
            dataset_dict(s, d)
            for d in s.scalars(query)
            if sees_dataset(person, d.owner, d.visibility, groups.get(d.vc, []))
        ]


@router.post("", response_model=DatasetOut, status_code=201)
def create_dataset(body: DatasetIn, person: Member, ctx: Ctx) -> dict:
    """Members of ``vc``: create an empty dataset (409 if the name exists in that VC)."""
    with ctx.db.writing() as s:
        d = ds.create(s, person, body.vc, body.name, body.description, body.visibility)
        return dataset_dict(s, d)


@router.get("/{vc}/{name}", response_model=DatasetOut)
def get_dataset(vc: str, name: str, person: Member, ctx: Ctx) -> dict:
    """One dataset with its version count, latest version and tags (404 when the caller may not see it)."""
    with ctx.db.session() as s:
        return dataset_dict(s, ds.visible(s, person, vc, name))


@router.patch("/{vc}/{name}", response_model=DatasetOut)
def patch_dataset(vc: str, name: str, body: DatasetPatch, person: Member, ctx: Ctx) -> dict:
    """The owner or an admin: change the description or the visibility."""
    with ctx.db.writing() as s:
        d = ds.visible(s, person, vc, name)
        ds.require_owner(person, d, "change")
        for key, value in body.model_dump(exclude_unset=True).items():
            if value is None:
                raise Refusal(422, f"{key}: may not be null")
            setattr(d, key, value)
        s.flush()
        return dataset_dict(s, d)


@router.delete("/{vc}/{name}", status_code=204)
def delete_dataset(vc: str, name: str, person: Member, ctx: Ctx) -> Response:
    """The owner or an admin: delete the dataset and its versions; 409 naming what still uses a version.
    What no other version of the VC names stops counting toward its storage quota at once."""
    with ctx.db.writing() as s:
        d = ds.visible(s, person, vc, name)
        ds.require_owner(person, d, "delete")
        ds.delete_dataset(s, d)
        owner = d.vc
    recount(ctx.storage, owner)
    return Response(status_code=204)


def _tag_refusal(tag: str) -> None:
    if tag == "latest" or tag.isdigit() or (tag[:1] == "v" and tag[1:].isdigit()):
        raise Refusal(422, f"tag {tag!r} would be read as a version reference; choose another name")


@router.put("/{vc}/{name}/tags/{tag}", response_model=VersionOut)
def put_tag(vc: str, name: str, body: TagIn, person: Member, ctx: Ctx, tag: str = TAG) -> dict:
    """Members who see the dataset: point ``tag`` at a version (tags are unique per dataset and movable)."""
    _tag_refusal(tag)
    with ctx.db.writing() as s:
        d = ds.visible(s, person, vc, name)
        ds.require_member(s, person, d)
        ds.set_tag(s, d, tag, body.version)
        return one_version(s, d, ds.resolve(s, d, tag))


@router.delete("/{vc}/{name}/tags/{tag}", status_code=204)
def delete_tag(vc: str, name: str, person: Member, ctx: Ctx, tag: str = TAG) -> Response:
    """Members who see the dataset: remove a tag (the version stays)."""
    with ctx.db.writing() as s:
        d = ds.visible(s, person, vc, name)
        ds.require_member(s, person, d)
        ds.delete_tag(s, d, tag)
    return Response(status_code=204)
