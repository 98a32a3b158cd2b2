"""The run ledger: a pure record builder, plus the I/O that gathers its facts.

A record says what a run was made of: dataset versions (manifest hashes), code (commit and the
hash of uncommitted changes, as the client sent them), environment (image digest where known;
locally the Python executable and a hash of the installed distributions, ``pip freeze``
equivalent), devices and driver, parameters, and at the end the exit code, final metrics
(``POST /jobs/{id}/metrics``, and the result a local job writes to ``$YITONG_RESULT_FD``) and
artifacts (files under the outputs directory).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import platform
import socket
import stat
import sys
import time
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

from blake3 import blake3

PARAMETERS = (
    "command",
    "framework",
    "nodes",
    "procs_per_node",
    "accelerator",
    "cpu",
    "memory",
    "env",
    "retries",
    "priority",
    "max_run_time",
    "outputs",
)


def start_record(
    *,
    run_id: int,
    job: dict[str, Any],
    attempt: int,
    spec: dict[str, Any],
    inputs: list[dict[str, Any]],
    code: dict[str, Any],
    environment: dict[str, Any],
    devices: dict[str, Any],
    backend: str,
    started: str,
) -> dict[str, Any]:
    return {
        "run": run_id,
        "job": job["id"],
        "name": job["name"],
        "vc": job["vc"],
        "user": job["user"],
        "attempt": attempt,
        "backend": backend,
        "spec": spec,
        "parameters": {k: spec.get(k) for k in PARAMETERS},
        "inputs": [{k: i.get(k) for k in ("dataset", "mount", "version", "manifest")} for i in inputs],
        "code": {k: code.get(k) for k in ("commit", "dirty_hash", "path")},
        "environment": environment,
        "devices": devices,
        "started": started,
        "finished": None,
        "state": "running",
        "exit_code": None,
        "metrics": {},
        "artifacts": [],
    }


def finish_record(
    record: dict[str, Any],
    *,
    state: str,
    exit_code: int | None,
    finished: str,
    metrics: dict[str, Any],
    artifacts: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        **record,
        "state": state,
        "exit_code": exit_code,
        "finished": finished,
        "metrics": metrics,
        "artifacts": artifacts,
    }


RESULT_KEYS = 64  # metrics in a job's result
RESULT_KEY_LENGTH = 128


def result_metrics(value: Any) -> dict[str, float]:
    """A job's result as its exit record carries it (what it wrote to ``$YITONG_RESULT_FD``):
    metric names to finite numbers, else nothing (the job wrote it: a bad one is dropped whole)."""
    if not isinstance(value, dict) or not 0 < len(value) <= RESULT_KEYS:
        return {}
    out: dict[str, float] = {}
    for k, v in value.items():
        if not (isinstance(k, str) and 0 < len(k) <= RESULT_KEY_LENGTH):
            return {}
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return {}
        out[k] = v
    return out


RUN_METRIC_NAMES = 1024  # names in one run's metrics, over all of its job's calls
RUN_METRICS_BYTES = 1 << 20  # the run's metrics as JSON
METRIC_NAME_LENGTH = 256


def merged_metrics(job_id: int, held: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``held`` with ``new`` merged in (a later value of a name replaces the earlier one), or
    ValueError with a sentence: each call is bounded by the request's size, their sum by these
    limits (the job posting them runs code nobody checked)."""
    for name in new:
        if not 0 < len(name) <= METRIC_NAME_LENGTH:
            raise ValueError(
                f"metric names must be 1 to {METRIC_NAME_LENGTH} characters; {name[:40]!r}... is {len(name)}"
            )
    merged = {**held, **new}
    if len(merged) > RUN_METRIC_NAMES:
        raise ValueError(
            f"job {job_id}'s run would hold {len(merged)} metric names; at most {RUN_METRIC_NAMES} (a later value of a name replaces the earlier one)"
        )
    size = len(json.dumps(merged))
    if size > RUN_METRICS_BYTES:
        raise ValueError(f"job {job_id}'s run metrics would be {size} bytes as JSON; at most {RUN_METRICS_BYTES}")
    return merged


def pinned_inputs(record: dict[str, Any]) -> list[dict[str, str]]:
    """The spec ``inputs`` that name the exact versions a record used (for a rerun)."""
    return [{"dataset": f"{i['dataset'].split('@')[0]}@{i['version']}", "mount": i["mount"]} for i in record["inputs"]]


# ---- I/O: call from a worker thread ----


@functools.cache
def local_environment() -> dict[str, Any]:
    dists = sorted(f"{d.metadata['Name']}=={d.version}".lower() for d in distributions() if d.metadata["Name"])
    return {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "pip_freeze_sha256": hashlib.sha256("\n".join(dists).encode()).hexdigest(),
        "packages": len(dists),
    }


def environment(spec: dict[str, Any]) -> dict[str, Any]:
    env = spec.get("environment") or {}
    image = env.get("image")
    digest = image.split("@", 1)[1] if image and "@sha256:" in image else None
    return {"image": image, "digest": digest, "kernel": env.get("kernel"), **local_environment()}


def device_info(spec: dict[str, Any], visible: list[int]) -> dict[str, Any]:
    return {"accelerator": spec.get("accelerator"), "visible": visible, **host_facts()}


HOST_FACTS_FOR = 60.0  # seconds the host's facts are kept (a driver or host name rarely changes)
_host: tuple[float, dict[str, Any]] | None = None


def host_facts() -> dict[str, Any]:
    """The driver, CPU model, host name, machine and kernel, read at most once a minute: the kernel
    writes all of /proc/cpuinfo out for each read, and every attempt's ledger entry names them."""
    global _host
    now = time.monotonic()
    if _host is not None and now - _host[0] < HOST_FACTS_FOR:
        return _host[1]
    driver = None
    nvidia = Path("/proc/driver/nvidia/version")
    if nvidia.exists():
        driver = nvidia.read_text().splitlines()[0].strip()
    cpu = next(
        (line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo") if line.startswith("model name")), None
    )
    facts = {
        "driver": driver,
        "cpu_model": cpu,
        "host": socket.gethostname(),
        "machine": platform.machine(),
        "kernel": platform.release(),
    }
    _host = (now, facts)
    return facts


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def artifacts(outputs: Path, limit: int = 10_000) -> list[dict[str, Any]]:
    """``[{path, size, blake3}]`` of the regular files under ``outputs`` (sorted, at most ``limit``).

    The outputs directory belongs to the job, which may plant links there: links are skipped and
    files are opened without following one (``O_NOFOLLOW``), so the record never describes a
    file outside the outputs that only the platform could read."""
    out: list[dict[str, Any]] = []
    if not outputs.is_dir() or outputs.is_symlink():
        return out
    for root, dirs, files in os.walk(outputs):  # never descends into linked directories
        dirs.sort()
        for name in sorted(files):
            p = Path(root) / name
            if len(out) >= limit:
                return out
            try:
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a link, or gone
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    continue
                h = blake3()
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            out.append({"path": p.relative_to(outputs).as_posix(), "size": st.st_size, "blake3": h.hexdigest()})
    return out
    for root, dirs, files in os.walk(outputs):
        dirs.sort()
        for name in sorted(files):
            p = Path(root) / name
            if not p.is_file() or len(out) >= limit:
                continue
            h = blake3()
            with open(p, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            out.append({"path": p.relative_to(outputs).as_posix(), "size": p.stat().st_size, "blake3": h.hexdigest()})
    return out
