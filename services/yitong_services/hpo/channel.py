"""The trial side's channel: NNI's legacy local file channel, which NNI's own trial runtime uses
when ``NNI_PLATFORM=local`` (nni/runtime/trial_command_channel/local_legacy.py), and which
``yitong_lab.hpo`` speaks too.

The platform writes ``$NNI_SYS_DIR/parameter.cfg`` (``{"parameter_id", "parameter_source",
"parameters", "parameter_index"}``) before the trial's job can start; the trial appends records
``ME%06d<json>\\n`` to ``$NNI_SYS_DIR/.nni/metrics``, each JSON ``{"type": "PERIODICAL" (NNI's
name for an intermediate result) | "FINAL", "sequence", "value": <JSON text of a number or of a dict with "default">}``. The driver
reads the file from the offset it last stored (the file only grows), so a restart reads nothing
twice. The trial's process is hostile: every record is bounded and checked.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

MAX_READ = 1 << 20  # bytes read per trial per pass
MAX_RECORD = 1_000_000  # NNI's own bound on one metric


def trial_env(sys_dir: Path, experiment_id: int, trial_id: int, number: int, params: dict[str, Any]) -> dict[str, str]:
    """The job environment of a trial (NNI's variables and ours)."""
    return {
        "NNI_PLATFORM": "local",
        "NNI_SYS_DIR": str(sys_dir),
        "NNI_OUTPUT_DIR": str(sys_dir),
        "NNI_TRIAL_JOB_ID": str(trial_id),
        "NNI_EXP_ID": str(experiment_id),
        "NNI_TRIAL_SEQ_ID": str(number),
        "MULTI_PHASE": "false",
        "YT_HPO_PARAMS": json.dumps(params),
    }


def write_parameters(sys_dir: Path, number: int, params: dict[str, Any]) -> None:
    """Atomically write ``parameter.cfg`` (a reader never sees half a file)."""
    sys_dir.mkdir(parents=True, exist_ok=True)
    doc = {"parameter_id": number, "parameter_source": "algorithm", "parameters": params, "parameter_index": 0}
    tmp = sys_dir / ".parameter.cfg.tmp"
    tmp.write_text(json.dumps(doc))
    tmp.chmod(0o644)  # the job's account reads it (multi-user); it cannot change it
    os.replace(tmp, sys_dir / "parameter.cfg")


def metric_value(text: Any, metric: str) -> float | None:
    """The objective's number from a record's ``value`` (JSON text of a number, or of a dict with
    ``metric``); None when it is not a finite number."""
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return None
    if isinstance(value, dict):
        value = value.get(metric, value.get("default"))
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def read_records(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Complete records from ``offset``; returns them and the offset after the last one read."""
    try:  # the trial owns this directory: never follow a link it planted
        if stat.S_ISLNK(os.lstat(path.parent).st_mode):
            return [], offset
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # absent, or a link
        return [], offset
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return [], offset
        f.seek(offset)
        data = f.read(MAX_READ)
    out: list[dict[str, Any]] = []
    pos = 0
    while pos + 8 <= len(data):
        if data[pos : pos + 2] != b"ME" or not data[pos + 2 : pos + 8].isdigit():
            return out, offset + len(data)  # garbage: skip what was read, never loop on it
        size = int(data[pos + 2 : pos + 8])
        if size > MAX_RECORD:
            return out, offset + len(data)
        end = pos + 8 + size
        if end > len(data):
            break  # a record still being written
        try:
            record = json.loads(data[pos + 8 : end].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            record = None
        if isinstance(record, dict):
            out.append(record)
        pos = end
    return out, offset + pos
