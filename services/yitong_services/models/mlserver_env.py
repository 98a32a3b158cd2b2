"""MLServer's environment built on first need (as ``make run`` does for VS Code): a deploy that
finds ``mlserver.executable()`` missing starts ``models.build`` once, in the background, and its
replicas wait for it (replica_wait.py) with the build's progress in the endpoint's reason, then
start; a failed build fails them at once with its reason.

Where: the folder two levels above ``models.mlserver`` (by default the checkout's
``.venv-mlserver``, where ``make mlserver`` puts it, so the tests' and the CLI's
``--python .venv-mlserver/bin/python`` find the same one). Its output:
``<data_dir>/logs/mlserver-install.log``; its state: ``<data_dir>/endpoints/mlserver-env.json``
(``{"state": "building"|"failed"|"ready", "pid", "log", "reason"}``, readable by the replicas'
accounts, which wait on it). One build at a time per service; a build left by a service that
stopped (its pid gone) counts as not started.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.confinement import private_dir
from . import mlserver

# the environment at its largest (MLServer with its runtimes, torch's CPU build, onnxruntime,
# pyarrow): for the percentage only; it shows 99% until the build ends
BUILT_BYTES = 1800 * 2**20
MEASURE_EVERY = 5.0  # seconds between walks of the environment's tree for the percentage
_lock = threading.Lock()
_measured: dict[str, tuple[float, int]] = {}  # venv -> (when, bytes)
_service: dict[str, Any] = {}  # "settings": this service's (configure)
_running: set[int] = set()  # pids of the builds this process waits for (_finish)


@dataclass(frozen=True)
class EnvState:
    """``state``: ready | building | failed | absent."""

    state: str
    percent: int = 0
    reason: str = ""
    log: str = ""

    def words(self) -> str:
        """The endpoint's reason while it waits on the environment (empty when ready)."""
        if self.state == "building":
            return f"building the model server environment, {self.percent}% (log: {self.log})"
        if self.state == "failed":
            return f"the model server environment could not be built: {self.reason} (log: {self.log})"
        return ""


def configure(settings: Any) -> None:
    """At the service's start: ``models.mlserver`` for mlserver.executable, and the settings
    :func:`current` reads the status with."""
    mlserver.configure(settings.models.mlserver)
    _service["settings"] = settings


def current() -> EnvState | None:
    """The environment's state for this service (None before :func:`configure`)."""
    settings = _service.get("settings")
    return state(settings) if settings is not None else None


def venv_dir() -> Path:
    return Path(mlserver.executable()).parent.parent


def status_file(settings: Any) -> Path:
    return Path(settings.data_dir).absolute() / "endpoints" / "mlserver-env.json"


def log_file(settings: Any) -> Path:
    return Path(settings.data_dir).absolute() / "logs" / "mlserver-install.log"


def build_command(settings: Any, venv: Path) -> list[str]:
    """``models.build``, else ``make mlserver MLSERVER_VENV=<venv>`` in the checkout (pure)."""
    if settings.models.build is not None:
        return list(settings.models.build)
    return ["make", "-C", str(mlserver.CHECKOUT), "mlserver", f"MLSERVER_VENV={venv}"]


def reason_of(log_tail: str, code: int) -> str:
    """The line of a failed build's output that says why (pip's ``ERROR:``, a compiler's
    ``error:``, else the last line), with its exit code (pure)."""
    lines = [line.strip() for line in log_tail.splitlines() if line.strip()]
    why = [line for line in lines if re.search(r"\b(ERROR|error|Error)\b|No such file|not found", line)]
    picked = (why or lines or [""])[-1][:300]
    return f"{picked} (exit {code})" if picked else f"the build exited {code}"


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write(path: Path, value: dict[str, Any]) -> None:
    private_dir(path.parent, 0o711)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    tmp.chmod(0o644)  # the replicas' accounts read it (replica_wait.py)
    tmp.replace(path)


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


def _tree_bytes(path: Path) -> int:
    total = 0
    for parent, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except OSError:
                pass
    return total


def _percent(venv: Path) -> int:
    now = time.monotonic()
    when, size = _measured.get(str(venv), (0.0, 0))
    if now - when > MEASURE_EVERY:
        size = _tree_bytes(venv)
        _measured[str(venv)] = (now, size)
    return min(99, 100 * size // BUILT_BYTES)


def state(settings: Any) -> EnvState:
    """Where the environment is: there, being built (how far), failed (why), or absent."""
    if mlserver.present():
        return EnvState("ready")
    s = _read(status_file(settings))
    log = s.get("log") or str(log_file(settings))
    if s.get("state") == "building":
        if s.get("pid") in _running or _alive(s.get("pid")):  # ours, or one a stopped service left running
            return EnvState("building", _percent(venv_dir()), log=log)
        # it ended with nobody to record how (the service stopped meanwhile): the replicas waiting
        # on it must not wait for ever
        reason = "the build stopped before it was recorded (the service restarted?); deploy again to build it"
        _write(status_file(settings), {"state": "failed", "reason": reason, "log": log})
        return EnvState("failed", reason=reason, log=log)
    if s.get("state") == "failed":
        return EnvState("failed", reason=s.get("reason", ""), log=log)
    return EnvState("absent", log=log)


def ensure(settings: Any) -> EnvState:
    """The environment's state, starting its build first when it is absent or its last build
    failed (a deploy is the person asking again). ``models.build: []``: never built here; the
    state is then ``failed``, saying how to build it."""
    with _lock:
        now = state(settings)
        if now.state in ("ready", "building"):
            return now
        command = build_command(settings, venv_dir())
        path = status_file(settings)
        if not command:
            reason = f"{mlserver.executable()} is missing and models.build is empty; run `make mlserver`"
            _write(path, {"state": "failed", "reason": reason, "log": ""})
            return EnvState("failed", reason=reason)
        log = log_file(settings)
        private_dir(log.parent, 0o700)
        out = open(log, "ab")
        try:
            out.write(f"\n== {time.strftime('%Y-%m-%d %H:%M:%S')} building {venv_dir()}: {command}\n".encode())
            out.flush()
            env = {**os.environ, "YITONG_MLSERVER_VENV": str(venv_dir())}
            child = subprocess.Popen(
                command,
                cwd=mlserver.CHECKOUT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # a Ctrl-C of the hub leaves it to finish, as VS Code's
            )
        except OSError as e:
            reason = f"{command[0]}: {e.strerror}"
            _write(path, {"state": "failed", "reason": reason, "log": str(log)})
            return EnvState("failed", reason=reason, log=str(log))
        finally:
            out.close()
        _running.add(child.pid)
        _write(path, {"state": "building", "pid": child.pid, "log": str(log)})
        threading.Thread(target=_finish, args=(child, path, log), name="mlserver-build", daemon=True).start()
        return EnvState("building", 0, log=str(log))


def ensure_status(settings: Any) -> Path | None:
    """For a deploy: None when the environment is there, else its build's status file (the
    build started when it was not under way)."""
    return None if ensure(settings).state == "ready" else status_file(settings)


def _finish(child: subprocess.Popen[bytes], path: Path, log: Path) -> None:
    try:
        _record(child.wait(), path, log)
    finally:
        _running.discard(child.pid)


def _record(code: int, path: Path, log: Path) -> None:
    if code == 0 and mlserver.present():
        _write(path, {"state": "ready", "log": str(log)})
        return
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 8192))
            tail = f.read().decode(errors="replace")
    except OSError:
        tail = ""
    if code == 0:
        tail, code = f"the build ended but {mlserver.executable()} is not there", 0
    _write(path, {"state": "failed", "reason": reason_of(tail, code), "log": str(log)})
