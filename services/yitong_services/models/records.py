"""Models, versions and aliases on a session; refusals name the model.

A model of a VC the caller is not a member of answers 404 like an unknown one (vcs/catalog.py
``member_vc``), so names do not leak.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..core.authz import Person
from ..core.errors import Refusal
from ..core.limits import MAX_ID
from ..datasets import records as datasets
from ..datasets.models import Dataset, DatasetRef
from ..vcs import catalog
from .models import Endpoint, Model, ModelAlias, ModelVersion

PREFIX = "model-"  # the backing dataset of <vc>/<name> is <vc>/model-<name>
REF_KIND = "model"


def full_name(m: Model) -> str:
    return f"{m.vc}/{m.name}"


def visible(session: Session, person: Person, vc: str, name: str) -> Model:
    try:
        catalog.member_vc(session, person, vc)
    except Refusal:
        raise Refusal(404, f"there is no model {vc}/{name}") from None
    m = session.scalar(select(Model).where(Model.vc == vc, Model.name == name))
    if m is None:
        raise Refusal(404, f"there is no model {vc}/{name}")
    return m


def require_owner(person: Person, m: Model, what: str) -> None:
    if not (person.admin or person.name == m.owner):
        raise Refusal(403, f"{person.name} may not {what} model {full_name(m)} of {m.owner}")


def create(session: Session, person: Person, vc: str, name: str, description: str) -> Model:
    catalog.member_vc(session, person, vc)
    if session.scalar(select(Model.id).where(Model.vc == vc, Model.name == name)) is not None:
        raise Refusal(409, f"model {vc}/{name} already exists")
    d = datasets.create(session, person, vc, PREFIX + name, f"the files of model {vc}/{name}", "vc")
    m = Model(vc=vc, name=name, description=description, owner=person.name, dataset_id=d.id)
    session.add(m)
    session.flush()
    return m


def dataset_of(session: Session, m: Model) -> Dataset:
    d = session.get(Dataset, m.dataset_id)
    assert d is not None  # a model's dataset is referenced by a foreign key
    return d


def latest(session: Session, m: Model) -> ModelVersion | None:
    return session.scalar(
        select(ModelVersion).where(ModelVersion.model_id == m.id).order_by(ModelVersion.number.desc()).limit(1)
    )


def resolve(session: Session, m: Model, ref: str) -> ModelVersion:
    """``ref``: a number, ``v<number>``, an alias, or ``latest``."""
    v: ModelVersion | None = None
    if ref == "latest":
        v = latest(session, m)
    else:
        digits = ref[1:] if ref[:1] == "v" and ref[1:].isdigit() else ref
        if digits.isascii() and digits.isdigit() and int(digits) <= MAX_ID:
            v = session.scalar(
                select(ModelVersion).where(ModelVersion.model_id == m.id, ModelVersion.number == int(digits))
            )
        if v is None:
            alias = session.scalar(select(ModelAlias).where(ModelAlias.model_id == m.id, ModelAlias.name == ref))
            v = session.get(ModelVersion, alias.version_id) if alias else None
    if v is None:
        what = "no versions yet" if ref == "latest" else f"no version or alias {ref}"
        raise Refusal(404, f"model {full_name(m)} has {what}")
    return v


def aliases_by_version(session: Session, m: Model) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for a in session.scalars(select(ModelAlias).where(ModelAlias.model_id == m.id).order_by(ModelAlias.name)):
        out.setdefault(a.version_id, []).append(a.name)
    return out


def set_alias(session: Session, m: Model, alias: str, number: int) -> ModelVersion:
    """Point ``alias`` at version ``number`` (moving it if it pointed elsewhere)."""
    v = resolve(session, m, str(number))
    a = session.scalar(select(ModelAlias).where(ModelAlias.model_id == m.id, ModelAlias.name == alias))
    if a is None:
        session.add(ModelAlias(model_id=m.id, name=alias, version_id=v.id))
    else:
        a.version_id = v.id
    session.flush()
    return v


def delete_alias(session: Session, m: Model, alias: str) -> None:
    a = session.scalar(select(ModelAlias).where(ModelAlias.model_id == m.id, ModelAlias.name == alias))
    if a is None:
        raise Refusal(404, f"model {full_name(m)} has no alias {alias}")
    session.delete(a)


def ref_name(m: Model, number: int) -> str:
    return f"{full_name(m)}:{number}"


def add_version(session: Session, m: Model, v: ModelVersion) -> None:
    """Insert ``v``; its dataset version is referenced by it, so it is not deleted meanwhile."""
    session.add(v)
    session.add(DatasetRef(version_id=v.dataset_version_id, kind=REF_KIND, ref=ref_name(m, v.number)))
    session.flush()


def _drop_refs(session: Session, m: Model, versions: list[ModelVersion]) -> None:
    for v in versions:
        for r in session.scalars(
            select(DatasetRef).where(
                DatasetRef.version_id == v.dataset_version_id,
                DatasetRef.kind == REF_KIND,
                DatasetRef.ref == ref_name(m, v.number),
            )
        ):
            session.delete(r)
    session.flush()


def refuse_if_served(session: Session, m: Model, version_ids: list[int] | None = None) -> None:
    """409 naming the endpoints that serve the model (or one of ``version_ids``)."""
    names = sorted(
        e.name
        for e in session.scalars(select(Endpoint).where(Endpoint.model_id == m.id))
        if version_ids is None
        or e.version_id in version_ids
        or any(r.get("version_id") in version_ids for r in e.replicas or [])
    )
    if names:
        raise Refusal(409, f"model {full_name(m)} is served by endpoint {', '.join(names)}; delete it first")


def delete_version(session: Session, m: Model, v: ModelVersion) -> None:
    """The registry entry and the backing dataset version (409 when something else uses it)."""
    refuse_if_served(session, m, [v.id])
    _drop_refs(session, m, [v])
    d = dataset_of(session, m)
    dv = datasets.resolve(session, d, str(v.number))
    session.delete(v)
    session.flush()
    datasets.delete_version(session, d, dv)


def delete_model(session: Session, m: Model) -> None:
    refuse_if_served(session, m)
    versions = list(session.scalars(select(ModelVersion).where(ModelVersion.model_id == m.id)))
    _drop_refs(session, m, versions)
    d = dataset_of(session, m)
    for a in session.scalars(select(ModelAlias).where(ModelAlias.model_id == m.id)):
        session.delete(a)
    for v in versions:
        session.delete(v)
    session.flush()
    session.delete(m)
    session.flush()
    datasets.delete_dataset(session, d)


def stats(session: Session, m: Model) -> tuple[int, int | None]:
    count = session.scalar(select(func.count(ModelVersion.id)).where(ModelVersion.model_id == m.id)) or 0
    last = latest(session, m)
    return count, (last.number if last else None)
