"""Dicts the model routes answer with (pure apart from the session reads)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..datasets.models import DatasetVersion
from . import records
from .models import Model, ModelAlias, ModelVersion


def model_dict(session: Session, m: Model) -> dict[str, Any]:
    count, last = records.stats(session, m)
    numbers = {v.id: v.number for v in session.scalars(select(ModelVersion).where(ModelVersion.model_id == m.id))}
    aliases = {
        a.name: numbers[a.version_id] for a in session.scalars(select(ModelAlias).where(ModelAlias.model_id == m.id))
    }
    return {
        "vc": m.vc,
        "name": m.name,
        "full_name": records.full_name(m),
        "description": m.description,
        "owner": m.owner,
        "created": m.created,
        "dataset": f"{m.vc}/{records.PREFIX}{m.name}",
        "versions": count,
        "latest": last,
        "aliases": dict(sorted(aliases.items())),
    }


def version_dict(m: Model, v: ModelVersion, dv: DatasetVersion, aliases: list[str]) -> dict[str, Any]:
    return {
        "model": records.full_name(m),
        "number": v.number,
        "author": v.author,
        "created": v.created,
        "manifest": dv.manifest,
        "files": dv.files,
        "bytes": dv.bytes,
        "message": dv.message,
        "framework": v.framework,
        "format": v.format,
        "signature": v.signature,
        "metrics": v.metrics,
        "tags": v.tags,
        "lineage": v.lineage,
        "aliases": aliases,
    }


def one_version(session: Session, m: Model, v: ModelVersion) -> dict[str, Any]:
    dv = session.get(DatasetVersion, v.dataset_version_id)
    assert dv is not None  # referenced by a foreign key
    return version_dict(m, v, dv, records.aliases_by_version(session, m).get(v.id, []))


def versions_list(session: Session, m: Model) -> list[dict[str, Any]]:
    aliases = records.aliases_by_version(session, m)
    rows = session.execute(
        select(ModelVersion, DatasetVersion)
        .join(DatasetVersion, DatasetVersion.id == ModelVersion.dataset_version_id)
        .where(ModelVersion.model_id == m.id)
        .order_by(ModelVersion.number.desc())
    )
    return [version_dict(m, v, dv, aliases.get(v.id, [])) for v, dv in rows]


def compare(model: str, versions: list[dict[str, Any]]) -> dict[str, Any]:
    """Metrics side by side (pure): every metric any version has, in name order; a version
    without one shows ``None`` there."""
    names = sorted({k for v in versions for k in v["metrics"]})
    return {
        "model": model,
        "metrics": names,
        "versions": [
            {"number": v["number"], "aliases": v["aliases"], "metrics": {k: v["metrics"].get(k) for k in names}}
            for v in versions
        ],
    }
