"""MLServer's files for one endpoint (pure builders) and the command that starts it.

MLServer 1.7.1 pins an older FastAPI than the platform, so it lives in its own virtual
environment with its runtimes (``make mlserver`` builds ``.venv-mlserver/``; runtimes.py says
which runtime serves what); the settings file's ``models.mlserver`` (else ``YITONG_MLSERVER``)
names its ``mlserver`` executable where it is elsewhere (:func:`configure`, at the service's
start); missing at a deploy, mlserver_env.py builds it and the replica waits for it. A replica does not run ``mlserver start``: it runs the platform's
``replica_server.py`` with that environment's Python (``command``), which serves MLServer's REST
API on the unix socket ``SOCKET`` in the replica's folder only, and refuses to start when it
cannot read its settings.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[3]
_configured: dict[str, str] = {}  # "mlserver": the settings file's models.mlserver (configure)


def configure(path: str | os.PathLike[str] | None) -> None:
    """The settings file's ``models.mlserver`` (None: the environment's or the default)."""
    _configured.pop("mlserver", None)
    if path:
        _configured["mlserver"] = str(Path(path).absolute())


def executable() -> str:
    """``models.mlserver``, else ``$YITONG_MLSERVER``, else ``<checkout>/.venv-mlserver/bin/mlserver``."""
    here = CHECKOUT / ".venv-mlserver" / "bin" / "mlserver"
    return _configured.get("mlserver") or os.environ.get("YITONG_MLSERVER") or str(here)


def present() -> bool:
    """Whether MLServer's environment is there (its ``mlserver`` and ``python``)."""
    return os.access(executable(), os.X_OK) and os.access(framework_python(), os.X_OK)


def extensions_dir() -> str:
    """The folder holding ``yitong_lab`` (found, not imported): the ONNX runtime class and the
    batch predictor are imported from it in the framework's environment."""
    spec = importlib.util.find_spec("yitong_lab")
    assert spec is not None and spec.submodule_search_locations
    return str(Path(list(spec.submodule_search_locations)[0]).parent)


SOCKET = "http.sock"  # in the replica's folder: MLServer's REST API, its only listener
SERVER = Path(__file__).with_name("replica_server.py")


WAIT = Path(__file__).with_name("replica_wait.py")


def command(root: Path, status: Path | None = None) -> list[str]:
    """A replica's argv: the platform's entry point in MLServer's environment (``-P``: the
    script's folder, where this module would stand in for MLServer's package, not on the path).
    The environment not there yet (``status``: its build's status file, mlserver_env.py): the
    same behind replica_wait.py on this interpreter, which waits for the build and execs it, or
    exits 1 with the build's reason."""
    argv = [framework_python(), "-P", str(SERVER), str(root), SOCKET]
    if status is None or present():
        return argv
    return [sys.executable, "-P", str(WAIT), str(status), executable(), *argv]


def environment(root: Path, custom: bool) -> dict[str, str]:
    """An endpoint's whole environment (never the service's): the platform's runtime classes on
    the path and, for a custom-Python version, its own files (``root/model``) after them."""
    path = [extensions_dir()] + ([str(root / "model")] if custom else [])
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join(path),
    }


def settings() -> dict[str, Any]:
    """``settings.json``: no metrics server, no parallel workers; loopback and port 0 in case
    anything bound them (replica_server.py serves REST on the socket only and starts no gRPC)."""
    return {
        "host": "127.0.0.1",
        "http_port": 0,
        "grpc_port": 0,
        "metrics_port": 0,
        "metrics_endpoint": None,
        "parallel_workers": 0,
        "load_models_at_startup": True,
        "debug": False,
    }


def model_settings(name: str, implementation: str, uri: str, version: str) -> dict[str, Any]:
    return {
        "name": name,
        "implementation": implementation,
        "parameters": {"uri": uri, "version": version},
    }


def framework_python() -> str:
    """The interpreter of the framework environment (the one MLServer runs in): batch
    inference predicts there, as ``yt model convert --python`` converts there."""
    return str(Path(executable()).parent / "python")
