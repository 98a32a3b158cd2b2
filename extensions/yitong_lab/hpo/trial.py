"""The trial API: parameters in, metrics out, over the platform's file channel (NNI's legacy
local channel: ``$NNI_SYS_DIR/parameter.cfg`` in, ``$NNI_SYS_DIR/.nni/metrics`` out), so a trial
may mix these calls with NNI's own. Outside an experiment ``get_params`` returns ``{}`` and the
reports print (handy while writing the trial)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

_sequence = 0


def _sys_dir() -> Path | None:
    d = os.environ.get("NNI_SYS_DIR")
    return Path(d) if d else None


def get_params() -> dict[str, Any]:
    """This trial's parameters (NNI's shape: nested choices are dicts with ``_name``)."""
    d = _sys_dir()
    if d is not None and (d / "parameter.cfg").is_file():
        return dict(json.loads((d / "parameter.cfg").read_text())["parameters"])
    text = os.environ.get("YT_HPO_PARAMS")
    return dict(json.loads(text)) if text else {}


def _send(kind: str, value: float | dict[str, float]) -> None:
    global _sequence
    record = {
        "parameter_id": 0,
        "trial_job_id": os.environ.get("NNI_TRIAL_JOB_ID", ""),
        "type": kind,
        "sequence": _sequence,
        "value": json.dumps(value),
    }
    _sequence += 1
    d = _sys_dir()
    if d is None:
        print(f"hpo {kind.lower()}: {value}", flush=True)
        return
    data = (json.dumps(record) + "\n").encode()
    (d / ".nni").mkdir(parents=True, exist_ok=True)
    with open(d / ".nni" / "metrics", "ab") as f:  # one write per record: the reader sees whole ones
        f.write(b"ME%06d%b" % (len(data), data))


def report(metric: float | dict[str, float], step: int | None = None) -> None:
    """An intermediate result (the assessor may stop the trial after it); ``step`` is for your logs,
    results count in the order sent."""
    _send("PERIODICAL", metric)


def report_final(value: float | dict[str, float]) -> None:
    """The trial's result: a number, or a dict holding the objective's metric (or ``default``)."""
    _send("FINAL", value)
