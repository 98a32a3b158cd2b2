"""Datasets, versions, tags and references on a session; refusals name the dataset.

A dataset the caller may not see answers 404 like an unknown one, so names do not leak.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..core.authz import Person, dataset_owner_refusal, member_refusal, sees_dataset
from ..core.errors import Refusal
from ..core.limits import MAX_ID
from ..vcs import catalog
from .models import Dataset, DatasetRef, DatasetTag, DatasetVersion


def full_name(d: Dataset) -> str:
    return f"{d.vc}/{d.name}"


def visible(session: Session, person: Person, vc: str, name: str) -> Dataset:
    d = session.scalar(select(Dataset).where(Dataset.vc == vc, Dataset.name == name))
    if d is None:
        raise Refusal(404, f"there is no dataset {vc}/{name}")
    groups = catalog.get_vc(session, vc).groups
    if not sees_dataset(person, d.owner, d.visibility, groups):
        raise Refusal(404, f"there is no dataset {vc}/{name}")
    return d


def require_member(session: Session, person: Person, d: Dataset) -> None:
    refused = member_refusal(person, d.vc, catalog.get_vc(session, d.vc).groups)
    if refused:
        raise Refusal(403, f"{refused}, so may not change dataset {full_name(d)}")


def require_owner(person: Person, d: Dataset, what: str) -> None:
    refused = dataset_owner_refusal(person, d.owner, full_name(d), what)
    if refused:
        raise Refusal(403, refused)


def create(session: Session, person: Person, vc: str, name: str, description: str, visibility: str) -> Dataset:
    catalog.member_vc(session, person, vc)
    if session.scalar(select(Dataset.id).where(Dataset.vc == vc, Dataset.name == name)) is not None:
        raise Refusal(409, f"dataset {vc}/{name} already exists")
    d = Dataset(vc=vc, name=name, description=description, visibility=visibility, owner=person.name, next_number=1)
    session.add(d)
    session.flush()
    return d


def latest(session: Session, d: Dataset) -> DatasetVersion | None:
    return session.scalar(
        select(DatasetVersion).where(DatasetVersion.dataset_id == d.id).order_by(DatasetVersion.number.desc()).limit(1)
    )


def resolve(session: Session, d: Dataset, ref: str) -> DatasetVersion:
    """``ref``: a number, ``v<number>``, a tag, or ``latest``."""
    if ref == "latest":
        v = latest(session, d)
    else:
        v = None
        digits = ref[1:] if ref[:1] == "v" and ref[1:].isdigit() else ref
        if digits.isascii() and digits.isdigit() and int(digits) <= MAX_ID:  # else: not a number, maybe a tag
            v = session.scalar(
                select(DatasetVersion).where(DatasetVersion.dataset_id == d.id, DatasetVersion.number == int(digits))
            )
        if v is None:
            tag = session.scalar(select(DatasetTag).where(DatasetTag.dataset_id == d.id, DatasetTag.name == ref))
            v = session.get(DatasetVersion, tag.version_id) if tag else None
    if v is None:
        what = "no versions yet" if ref == "latest" else f"no version or tag {ref}"
        raise Refusal(404, f"dataset {full_name(d)} has {what}")
    return v


def tags_by_version(session: Session, d: Dataset) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for t in session.scalars(select(DatasetTag).where(DatasetTag.dataset_id == d.id).order_by(DatasetTag.name)):
        out.setdefault(t.version_id, []).append(t.name)
    return out


def referrers(session: Session, version_ids: list[int]) -> list[tuple[int, str]]:
    """(version id, "job 42") for every reference to one of ``version_ids``."""
    if not version_ids:
        return []
    rows = session.scalars(select(DatasetRef).where(DatasetRef.version_id.in_(version_ids)).order_by(DatasetRef.id))
    return [(r.version_id, f"{r.kind} {r.ref}") for r in rows]


def holders(session: Session, table: str, ids: list[int]) -> list[str]:
    """Tables of other packages whose rows hold one of ``ids`` of ``table`` by a foreign key
    without ``ON DELETE CASCADE`` (a model's registry rows hold its backing dataset and versions),
    as ``"models (1)"``: what would stop the delete. Found from the tables' own foreign keys, so a
    package that adds one needs no change here."""
    if not ids:
        return []
    out = []
    for other in Dataset.metadata.sorted_tables:
        for fk in other.foreign_keys:
            if fk.column.table.name == table and fk.column.name == "id" and not fk.ondelete:
                count = session.scalar(select(func.count()).select_from(other).where(fk.parent.in_(ids))) or 0
                if count:
                    out.append(f"{other.name} ({count})")
    return out


def refuse_if_referenced(session: Session, d: Dataset, versions: list[DatasetVersion]) -> None:
    numbers = {v.id: v.number for v in versions}
    used = referrers(session, list(numbers))
    if used:
        said = "; ".join(f"version {numbers[vid]} is used by {who}" for vid, who in used)
        raise Refusal(409, f"dataset {full_name(d)}: {said}")
    held = holders(session, DatasetVersion.__tablename__, list(numbers))
    if held:
        raise Refusal(
            409, f"dataset {full_name(d)}: its versions are held by {', '.join(held)}; delete what holds them first"
        )


def delete_version(session: Session, d: Dataset, v: DatasetVersion) -> None:
    refuse_if_referenced(session, d, [v])
    for tag in session.scalars(select(DatasetTag).where(DatasetTag.version_id == v.id)):
        session.delete(tag)
    session.delete(v)


def delete_dataset(session: Session, d: Dataset) -> None:
    versions = list(session.scalars(select(DatasetVersion).where(DatasetVersion.dataset_id == d.id)))
    refuse_if_referenced(session, d, versions)
    held = holders(session, Dataset.__tablename__, [d.id])
    if held:
        raise Refusal(409, f"dataset {full_name(d)} is held by {', '.join(held)}; delete what holds it first")
    for tag in session.scalars(select(DatasetTag).where(DatasetTag.dataset_id == d.id)):
        session.delete(tag)
    session.flush()
    for v in versions:
        session.delete(v)
    session.flush()
    session.delete(d)


def set_tag(session: Session, d: Dataset, tag: str, number: int) -> None:
    v = resolve(session, d, str(number))
    t = session.scalar(select(DatasetTag).where(DatasetTag.dataset_id == d.id, DatasetTag.name == tag))
    if t is None:
        session.add(DatasetTag(dataset_id=d.id, name=tag, version_id=v.id))
    else:
        t.version_id = v.id
    session.flush()


def delete_tag(session: Session, d: Dataset, tag: str) -> None:
    t = session.scalar(select(DatasetTag).where(DatasetTag.dataset_id == d.id, DatasetTag.name == tag))
    if t is None:
        raise Refusal(404, f"dataset {full_name(d)} has no tag {tag}")
    session.delete(t)


def in_vc(session: Session, vc: str) -> list[str]:
    return [f"{vc}/{n}" for n in session.scalars(select(Dataset.name).where(Dataset.vc == vc).order_by(Dataset.name))]


def stats(session: Session, d: Dataset) -> tuple[int, int | None, int]:
    """(version count, latest number, bytes of the latest)."""
    count = session.scalar(select(func.count(DatasetVersion.id)).where(DatasetVersion.dataset_id == d.id)) or 0
    last = latest(session, d)
    return count, (last.number if last else None), (last.bytes if last else 0)
