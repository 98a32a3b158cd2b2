"""``python -m yitong_lab.hpo.forward -- ARGV...``: NNI's file channel where the platform cannot
read the trial's files (a Kubernetes pod, a node without the shared filesystem).

NNI's trial runtime (``NNI_PLATFORM=local``) reads ``$NNI_SYS_DIR/parameter.cfg`` and appends its
reports to ``$NNI_SYS_DIR/.nni/metrics``. The platform starts such a trial through this module,
which makes a private directory on the trial's own machine (``NNI_SYS_DIR`` for ARGV; NNI's
``NNI_OUTPUT_DIR`` is the job's outputs), writes ``parameter.cfg`` there from ``YT_HPO_PARAMS``,
runs ARGV, and sends each record the trial appends to the platform over HTTP with the job's own
token (as ``yitong_lab.hpo`` does), the last ones after ARGV ends; then removes the directory.
Its exit code is ARGV's. The trial code and the real ``nni`` package run unchanged. Only the
stdlib is imported.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

from . import trial

PAUSE = 0.2  # seconds between looks at the metrics file while the trial runs
MAX_RECORD = 1_000_000  # NNI's own bound on one metric


def records(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """Complete ``ME%06d<json>`` records at the start of ``data`` and the bytes they took."""
    out: list[dict[str, Any]] = []
    pos = 0
    while pos + 8 <= len(data):
        if data[pos : pos + 2] != b"ME" or not data[pos + 2 : pos + 8].isdigit():
            return out, len(data)  # not NNI's framing: skip what was read
        size = int(data[pos + 2 : pos + 8])
        end = pos + 8 + size
        if size > MAX_RECORD:
            return out, len(data)
        if end > len(data):
            break  # still being written
        try:
            record = json.loads(data[pos + 8 : end].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            record = None
        if isinstance(record, dict):
            out.append(record)
        pos = end
    return out, pos


class Forwarder:
    def __init__(self, sys_dir: str) -> None:
        self.path = os.path.join(sys_dir, ".nni", "metrics")
        self.offset = 0

    def send(self) -> None:
        """Every complete record appended since the last look, in order."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(1 << 20)
        except FileNotFoundError:
            return
        found, used = records(data)
        self.offset += used
        for record in found:
            kind = "FINAL" if record.get("type") == "FINAL" else "PERIODICAL"
            try:
                value: Any = json.loads(record["value"]) if isinstance(record.get("value"), str) else record["value"]
                trial._post(kind, value)
            except (KeyError, ValueError, trial.ReportError) as e:  # a bad record: say so, go on
                print(f"yitong: a trial report was not taken: {e}", file=sys.stderr, flush=True)


def prepare(sys_dir: str) -> None:
    """``$NNI_SYS_DIR/parameter.cfg`` from ``YT_HPO_PARAMS`` (what NNI's runtime reads)."""
    os.makedirs(os.path.join(sys_dir, ".nni"), exist_ok=True)
    params = json.loads(os.environ.get("YT_HPO_PARAMS") or "{}")
    doc = {"parameter_id": 0, "parameter_source": "algorithm", "parameters": params, "parameter_index": 0}
    tmp = os.path.join(sys_dir, ".parameter.cfg.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, os.path.join(sys_dir, "parameter.cfg"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: python -m yitong_lab.hpo.forward -- ARGV...", file=sys.stderr)
        return 2
    if not os.environ.get("YT_HPO_PARAMS"):
        print("yitong: YT_HPO_PARAMS is not set; this runs a trial of an experiment", file=sys.stderr)
        return 2
    import shutil
    import tempfile

    sys_dir = tempfile.mkdtemp(prefix="yitong-trial-")  # 0700, a new name: safe on a shared /tmp
    try:
        prepare(sys_dir)
        # everything the trial reports goes through the file, so one sender numbers its steps
        env = {**os.environ, "YT_HPO_CHANNEL": "file", "NNI_SYS_DIR": sys_dir}
        env["NNI_OUTPUT_DIR"] = os.environ.get("YITONG_OUTPUT_DIR") or sys_dir
        try:
            child = subprocess.Popen(argv[1:], env=env)
        except OSError as e:
            print(f"yitong: cannot run {argv[1]!r}: {e}", file=sys.stderr)
            return 127
        for sig in (signal.SIGTERM, signal.SIGINT):  # a cancel reaches the trial; its last reports still go
            signal.signal(sig, lambda s, _f: child.send_signal(s))
        forwarder = Forwarder(sys_dir)
        while True:
            try:
                child.wait(timeout=PAUSE)
                break
            except subprocess.TimeoutExpired:
                forwarder.send()
        forwarder.send()
        return child.returncode if child.returncode >= 0 else 128 - child.returncode
    finally:
        shutil.rmtree(sys_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
