"""A model version's lineage from a job's ledger record (pure)."""

from __future__ import annotations

import math
from typing import Any


def from_record(job_id: int, record: dict[str, Any], path: str) -> dict[str, Any]:
    """What made the model: the job and run, its code snapshot, the dataset versions it read
    (manifest hashes), its environment and parameters, and where under its outputs it was."""
    env = record.get("environment") or {}
    return {
        "job": job_id,
        "run": record.get("run"),
        "attempt": record.get("attempt"),
        "path": path,
        "code": {k: (record.get("code") or {}).get(k) for k in ("commit", "dirty_hash", "path")},
        "datasets": [{k: i.get(k) for k in ("dataset", "version", "manifest")} for i in record.get("inputs") or []],
        "environment": {k: env.get(k) for k in ("image", "digest", "python_version", "pip_freeze_sha256")},
        "parameters": record.get("parameters") or {},
        "metrics": record.get("metrics") or {},
    }


def metrics_of(record: dict[str, Any]) -> dict[str, float]:
    """The record's final numeric metrics (what ``POST /jobs/{id}/metrics`` sent)."""
    out: dict[str, float] = {}
    for k, v in (record.get("metrics") or {}).items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            continue
        out[str(k)[:128]] = float(v)
    return out
