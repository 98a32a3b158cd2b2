"""Dataset and version rows -> API dicts."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from .models import Dataset, DatasetTag, DatasetVersion
from .records import full_name, stats, tags_by_version


def dataset_dict(session: Session, d: Dataset) -> dict:
    count, last, size = stats(session, d)
    numbers = dict(
        session.execute(select(DatasetVersion.id, DatasetVersion.number).where(DatasetVersion.dataset_id == d.id)).all()
    )
    tags = {
        t.name: numbers[t.version_id] for t in session.scalars(select(DatasetTag).where(DatasetTag.dataset_id == d.id))
    }
    return {
        "vc": d.vc,
        "name": d.name,
        "full_name": full_name(d),
        "description": d.description,
        "visibility": d.visibility,
        "owner": d.owner,
        "created": d.created,
        "versions": count,
        "latest": last,
        "bytes": size,
        "tags": dict(sorted(tags.items())),
    }


#: what a version no platform job made says of its origin (besides its parent)
NO_LINEAGE: dict = {"job": None, "kind": None, "model": None, "model_manifest": None, "inputs": []}


def version_dict(d: Dataset, v: DatasetVersion, tags: list[str]) -> dict:
    return {
        "dataset": full_name(d),
        "number": v.number,
        "manifest": v.manifest,
        "parent": v.parent,
        "author": v.author,
        "message": v.message,
        "created": v.created,
        "files": v.files,
        "bytes": v.bytes,
        "tags": tags,
        "lineage": {**NO_LINEAGE, **(v.lineage or {}), "parent": v.parent},
    }


def versions_list(session: Session, d: Dataset) -> list[dict]:
    tags = tags_by_version(session, d)
    rows = session.scalars(
        select(DatasetVersion).where(DatasetVersion.dataset_id == d.id).order_by(DatasetVersion.number.desc())
    )
    return [version_dict(d, v, tags.get(v.id, [])) for v in rows]


def one_version(session: Session, d: Dataset, v: DatasetVersion) -> dict:
    return version_dict(d, v, tags_by_version(session, d).get(v.id, []))
