"""The trial API: parameters in, metrics out. Parameters come from ``YT_HPO_PARAMS`` (else NNI's
``$NNI_SYS_DIR/parameter.cfg``). Reports go to the platform over HTTP with the job's own token
(``POST /experiments/trials/{job}/report``: works on every backend and in multi-user mode), and
without one, to NNI's legacy local file channel (``$NNI_SYS_DIR/.nni/metrics``), so a trial may
mix these calls with NNI's own (``YT_HPO_CHANNEL=file`` in the template's env forces the file
channel). Outside an experiment ``get_params`` returns ``{}`` and the
reports print (handy while writing the trial). Only the stdlib is imported."""

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
    text = os.environ.get("YT_HPO_PARAMS")
    if text:
        return dict(json.loads(text))
    d = _sys_dir()
    if d is not None and (d / "parameter.cfg").is_file():
        return dict(json.loads((d / "parameter.cfg").read_text())["parameters"])
    return {}


_steps = 0
RETRY_FOR = 300.0  # seconds a report is retried while the platform is unreachable (a restart)


def _post(kind: str, value: float | dict[str, float]) -> bool:
    """Report over HTTP with the job's token; False when this is not a platform job. Retried
    while the platform restarts; an intermediate result carries its step, so a retry of one the
    platform already stored is not counted twice."""
    global _steps
    url, token, job = (os.environ.get(k) for k in ("YITONG_API_URL", "YITONG_JOB_TOKEN", "YITONG_JOB_ID"))
    if not (url and token and job and os.environ.get("YT_HPO_PARAMS")) or os.environ.get("YT_HPO_CHANNEL") == "file":
        return False
    import time
    import urllib.error
    import urllib.request

    doc: dict[str, Any] = {"type": "final" if kind == "FINAL" else "intermediate", "value": value}
    if kind != "FINAL":
        doc["step"] = _steps
        _steps += 1
    request = urllib.request.Request(
        f"{url.rstrip('/')}/experiments/trials/{job}/report",
        data=json.dumps(doc).encode(),
        method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    deadline, pause = time.monotonic() + RETRY_FOR, 0.2
    while True:
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
            return True
        except urllib.error.HTTPError as error:
            if error.code < 500 or time.monotonic() > deadline:
                raise
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 5.0)


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
    if _post(kind, value):
        return
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
