"""MLServer's files for one endpoint (pure builders) and the command that starts it.

MLServer 1.7.1 pins an older FastAPI than the platform, so it lives in its own virtual
environment (``make mlserver`` builds ``.venv-mlserver/``); ``YITONG_MLSERVER`` names its
``mlserver`` executable where it is elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: framework -> MLServer runtime class. ``python``: MLServer's custom runtime, the version's own
#: ``model.py`` with a class ``Model`` (an ``mlserver.MLModel``); the version's files are copied
#: to ``<endpoint>/model/`` beside ``model-settings.json``, whose folder MLServer puts on the path.
RUNTIMES = {
    "sklearn": "mlserver_sklearn.SKLearnModel",
    "scikit-learn": "mlserver_sklearn.SKLearnModel",
    "python": "model.model.Model",
}
MODEL_SUFFIXES = (".joblib", ".pkl", ".pickle")
CUSTOM_FILE = "model.py"


def executable() -> str:
    here = Path(__file__).resolve().parents[3] / ".venv-mlserver" / "bin" / "mlserver"
    return os.environ.get("YITONG_MLSERVER") or str(here)


def runtime_for(framework: str) -> str | None:
    return RUNTIMES.get(framework.lower())


def model_file(paths: list[str], framework: str = "sklearn") -> str | None:
    """The one file the runtime loads: ``model.py`` for the custom runtime; else the first
    model-looking file, else the only file."""
    if framework.lower() == "python":
        return CUSTOM_FILE if CUSTOM_FILE in paths else None
    found = sorted(p for p in paths if p.endswith(MODEL_SUFFIXES))
    if found:
        return found[0]
    return paths[0] if len(paths) == 1 else None


def settings(port: int) -> dict[str, Any]:
    """``settings.json``: HTTP on loopback only, no gRPC, no metrics server, no parallel workers."""
    return {
        "host": "127.0.0.1",
        "http_port": port,
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
    """The interpreter of the scikit-learn environment (the one MLServer runs in): batch
    inference predicts there, as ``yt model convert --python`` converts there."""
    return str(Path(executable()).parent / "python")
