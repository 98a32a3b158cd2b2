"""The trial API: parameters in, metrics out. Parameters come from ``YT_HPO_PARAMS`` (else NNI's
``$NNI_SYS_DIR/parameter.cfg``). Reports go to the platform over HTTP with the job's own token
(``POST /experiments/trials/{job}/report``: works on every backend and in multi-user mode), and
without one, to NNI's legacy local file channel (``$NNI_SYS_DIR/.nni/metrics``), so a trial may
mix these calls with NNI's own (``YT_HPO_CHANNEL=file`` in the template's env forces the file
channel). Where the platform reads the trial's directory when its job ends (it says so with
``YT_HPO_FINAL=file``: the local backend, Slurm on the shared filesystem), the final result is
appended to the file channel, which saves the trial a round trip; on the local backend it goes
to the job's result pipe instead (``$YITONG_RESULT_FD``: the job's wrapper keeps it in the exit
record), which saves the trial its files too. Intermediate results still go over HTTP, so the
assessor sees each at once. Outside an experiment ``get_params`` returns ``{}`` and the
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


class ReportError(RuntimeError):
    """The platform refused a report (4xx): the sentence it gave."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"the platform answered {status}: {text}")
        self.status = status


def _http_post(url: str, body: bytes, token: str, timeout: float = 30.0) -> tuple[int, bytes]:
    """One HTTP/1.1 POST -> (status, body). A plain ``http://`` URL goes over a bare socket:
    ``http.client`` and ``urllib.request`` cost 50-100 ms to import, more than a no-op trial
    itself; anything else (``https://``) goes through ``urllib.request``."""
    if not url.startswith("http://"):
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
    import socket

    hostport, _, path = url[len("http://") :].partition("/")
    host, _, port = hostport.rpartition(":") if hostport.rpartition(":")[2].isdigit() else (hostport, "", "80")
    head = (
        f"POST /{path} HTTP/1.1\r\nHost: {hostport}\r\nAuthorization: token {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + body)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    raw = b"".join(chunks)
    status_line, _, rest = raw.partition(b"\r\n")
    parts = status_line.split()
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise ConnectionError(f"not an HTTP answer from {hostport}: {status_line[:80]!r}")
    return int(parts[1]), rest.partition(b"\r\n\r\n")[2]


def _post(kind: str, value: float | dict[str, float]) -> bool:
    """Report over HTTP with the job's token; False when this is not a platform job. Retried
    while the platform restarts; an intermediate result carries its step, so a retry of one the
    platform already stored is not counted twice."""
    global _steps
    if kind == "FINAL" and os.environ.get("YT_HPO_FINAL") == "file" and _sys_dir() is not None:
        _check_final(value)
        return False  # the platform reads it from the trial's directory when the job ends
    url, token, job = (os.environ.get(k) for k in ("YITONG_API_URL", "YITONG_JOB_TOKEN", "YITONG_JOB_ID"))
    if not (url and token and job and os.environ.get("YT_HPO_PARAMS")) or os.environ.get("YT_HPO_CHANNEL") == "file":
        return False
    import time

    doc: dict[str, Any] = {"type": "final" if kind == "FINAL" else "intermediate", "value": value}
    if kind != "FINAL":
        doc["step"] = _steps
        _steps += 1
    target = f"{url.rstrip('/')}/experiments/trials/{job}/report"
    body = json.dumps(doc).encode()
    deadline, pause = time.monotonic() + RETRY_FOR, 0.2
    while True:
        try:
            status, answer = _http_post(target, body, token)
            if status < 300:
                return True
            if status < 500 or time.monotonic() > deadline:
                raise ReportError(status, _detail(answer))
        except (OSError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 5.0)


def _check_final(value: Any) -> None:
    """What the platform would refuse over HTTP, refused here: a final result it reads from a file
    has no one to answer."""
    import math

    numbers = list(value.values()) if isinstance(value, dict) else [value]
    if not numbers or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in numbers
    ):
        raise ValueError(f"report_final: a finite number, or a map of metric names to finite numbers, not {value!r}")


def _detail(answer: bytes) -> str:
    """The platform's sentence from an error body (``{"detail": ...}``), else the body itself."""
    try:
        detail = json.loads(answer).get("detail")
        return detail if isinstance(detail, str) else json.dumps(detail)
    except (ValueError, AttributeError):
        return answer[:300].decode("utf-8", "replace")


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
    if kind == "FINAL" and os.environ.get("YT_HPO_FINAL") == "file" and _to_result_fd(value):
        return
    d = _sys_dir()
    if d is None:
        print(f"hpo {kind.lower()}: {value}", flush=True)
        return
    data = (json.dumps(record) + "\n").encode()
    (d / ".nni").mkdir(parents=True, exist_ok=True)
    with open(d / ".nni" / "metrics", "ab") as f:  # one write per record: the reader sees whole ones
        f.write(b"ME%06d%b" % (len(data), data))


def _to_result_fd(value: float | dict[str, float]) -> bool:
    """The final result as the job's result (a line of JSON on ``$YITONG_RESULT_FD``, a pipe to
    the job's wrapper); False where there is none, or the descriptor is not that pipe any more."""
    import stat

    try:
        fd = int(os.environ.get("YITONG_RESULT_FD", ""))
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        line = json.dumps(value if isinstance(value, dict) else {"default": value}).encode() + b"\n"
        return os.write(fd, line) == len(line)  # one write: the wrapper reads whole lines
    except (ValueError, OSError):
        return False


def report(metric: float | dict[str, float], step: int | None = None) -> None:
    """An intermediate result (the assessor may stop the trial after it); ``step`` is for your logs,
    results count in the order sent."""
    _send("PERIODICAL", metric)


def report_final(value: float | dict[str, float]) -> None:
    """The trial's result: a number, or a dict holding the objective's metric (or ``default``)."""
    _send("FINAL", value)
