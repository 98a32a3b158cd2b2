"""Batch inference, the pure parts: which files of the input version are read, their header
checked against the requested columns and the model's signature, the job spec that runs it,
and the lineage its output version records.

A batch inference job is a platform job (same queue, quotas, logs, ledger) whose program is
``python -m yitong_lab.models.batch PLAN``: the model version and the input dataset version are
its inputs (mounts ``model`` and ``data``, materialised read-only), the prediction runs in the
framework's interpreter (``yitong_lab.models.batch_predict``) chunk by chunk into the job's
outputs, and the job commits the predictions with its own token (models/batch_jobs.py).
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

CSV_SUFFIX = ".csv"
PARQUET_SUFFIX = ".parquet"
SUFFIXES = (CSV_SUFFIX, PARQUET_SUFFIX)
MODEL_MOUNT, DATA_MOUNT = "model", "data"
RUNNER = "yitong_lab.models.batch"
HEADER_BYTES = 1 << 16
PREDICTION = "prediction"  # the output column beside the kept ones (yitong_lab.models.batch_predict)


def input_files(files: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    """The manifest entries of the CSV and Parquet files at or under ``path`` ('' = the whole
    version), sorted."""
    path = path.strip("/")
    chosen = [
        f
        for f in files
        if f["path"].endswith(SUFFIXES) and (not path or f["path"] == path or f["path"].startswith(path + "/"))
    ]
    return sorted(chosen, key=lambda f: f["path"])


def parse_header(first: bytes) -> list[str] | None:
    """The column names on the first line of a CSV file (None: no complete first line)."""
    line, newline, _ = first.partition(b"\n")
    if not newline and len(first) >= HEADER_BYTES:
        return None
    try:
        text = line.decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError:
        return None
    rows = list(csv.reader(io.StringIO(text)))
    return [c.strip() for c in rows[0]] if rows else []


def parquet_header(names: list[str]) -> list[str]:
    """A Parquet file's columns as pandas reads them: without the index pandas wrote beside them."""
    return [n for n in names if not (n.startswith("__index_level_") and n.endswith("__"))]


def columns_refusal(
    file: str, header: list[str], columns: list[str], keep: list[str], width: int | None
) -> tuple[list[str] | None, str | None]:
    """(the feature columns, None) or (None, a sentence saying what does not fit)."""
    if len(set(header)) != len(header):
        return None, f"{file}: the header names a column twice"
    if PREDICTION in keep:
        return None, f"keep: {PREDICTION} is the name of the predictions' column; rename that column"
    missing = [c for c in [*columns, *keep] if c not in header]
    if missing:
        return None, f"{file} has no column {', '.join(missing[:5])} (it has {', '.join(header[:20])})"
    chosen = list(columns) if columns else [c for c in header if c not in keep]
    if not chosen:
        return None, f"{file}: no feature columns are left beside keep"
    if len(set(chosen)) != len(chosen):
        return None, "columns: a column is named twice"
    if width is not None and len(chosen) != width:
        return None, f"the model takes {width} features; {len(chosen)} columns were chosen ({', '.join(chosen[:10])})"
    return chosen, None


def signature_width(signature: dict[str, Any]) -> int | None:
    """The feature count a version's signature gives (one input of shape [-1, N]), else None."""
    inputs = (signature or {}).get("inputs") or []
    if len(inputs) != 1:
        return None
    shape = inputs[0].get("shape") or []
    return int(shape[-1]) if len(shape) >= 2 and int(shape[-1]) > 0 else None


def job_name(model: str) -> str:
    return ("batch-" + model)[:32].rstrip("-")


def threads(cpu: float) -> int:
    """The threads the prediction parses with: the whole CPUs the job holds, at least one."""
    return max(1, math.floor(cpu))


def plan(
    python: str, columns: list[str], keep: list[str], chunk_rows: int, path: str, cpu: float = 1.0
) -> dict[str, Any]:
    """What the runner is told (one argv element, JSON; never shell text)."""
    return {
        "python": python,
        "columns": columns,
        "keep": keep,
        "chunk_rows": chunk_rows,
        "path": path.strip("/"),
        "threads": threads(cpu),
    }


def batch_spec(
    *,
    name: str,
    vc: str,
    model_dataset: str,
    input_dataset: str,
    the_plan: dict[str, Any],
    cpu: float,
    memory: int,
    retries: int,
) -> dict[str, Any]:
    """The job spec of a batch inference job (``model_dataset``, ``input_dataset``: ``vc/name@number``)."""
    return {
        "name": name,
        "vc": vc,
        "environment": {"kernel": "python3"},
        "command": ["python", "-m", RUNNER, json.dumps(the_plan, separators=(",", ":"))],
        "inputs": [
            {"dataset": model_dataset, "mount": MODEL_MOUNT},
            {"dataset": input_dataset, "mount": DATA_MOUNT},
        ],
        "cpu": cpu,
        "memory": memory,
        "retries": retries,
    }


def lineage(job_id: int, model: str, model_manifest: str, source: dict[str, Any]) -> dict[str, Any]:
    """What the output version records: the job, the model version, the input version."""
    return {
        "kind": "batch-inference",
        "job": job_id,
        "model": model,
        "model_manifest": model_manifest,
        "inputs": [{k: source[k] for k in ("dataset", "version", "manifest", "path")}],
    }


def progress(metrics: dict[str, Any]) -> dict[str, Any]:
    """The runner's progress metrics (``batch_*``) of the current run, without the prefix."""
    return {k[len("batch_") :]: v for k, v in (metrics or {}).items() if k.startswith("batch_")}
