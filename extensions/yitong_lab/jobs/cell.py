"""``%%yt job submit``: a notebook cell becomes a job.

The cell is saved as ``.yitong/cells/<hash>.py`` under the notebook's working directory
(:func:`save_cell`; the name is the content's hash, so the same cell is one file) and the job
runs ``python <that file>`` from that directory (:func:`cell_spec`, a pure builder). On the
local backend ``python`` is the platform's Python (its bin directory comes first on the job's
``PATH``), which has ``yitong_lab``, so the cell can call ``yitong_lab.log_metrics``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

CELLS = Path(".yitong") / "cells"
GPU = "nvidia.com/gpu"


def cell_name(cell: str) -> str:
    """The hash naming a cell's file and its default job name."""
    return hashlib.sha256(cell.encode()).hexdigest()[:16]


def save_cell(cell: str, directory: str | os.PathLike[str]) -> Path:
    """Write the cell to ``<directory>/.yitong/cells/<hash>.py`` (atomically; kept if present)."""
    folder = Path(directory).resolve() / CELLS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{cell_name(cell)}.py"
    text = cell if cell.endswith("\n") else cell + "\n"
    if not path.exists() or path.read_text(errors="replace") != text:
        tmp = folder / f".{path.name}.{os.getpid()}.tmp"
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def parse_pairs(items: list[str] | None, what: str) -> dict[str, str]:
    """``["K=V", ...]`` -> ``{K: V}``; ``ValueError`` names the item without ``=``."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} {item!r}: expected NAME=VALUE")
        out[key] = value
    return out


def accelerator(gpus: int | None, spec: str | None) -> dict[str, Any] | None:
    """``--gpus N`` or ``--accelerator TYPE[=COUNT]`` -> ``{type, count}``."""
    if spec:
        kind, _, count = spec.partition("=")
        if not re.fullmatch(r"\d+", count or "1"):
            raise ValueError(f"--accelerator {spec!r}: expected TYPE=COUNT, e.g. nvidia.com/gpu=2")
        return {"type": kind, "count": int(count or 1)}
    return {"type": GPU, "count": gpus} if gpus else None


def inputs(items: list[str] | None) -> list[dict[str, str]]:
    """``--input vision/mnist@3[:mount]`` -> spec ``inputs``."""
    out = []
    for item in items or []:
        dataset, _, mount = item.partition(":")
        out.append({"dataset": dataset, "mount": mount} if mount else {"dataset": dataset})
    return out


def cell_spec(
    script: str,
    *,
    vc: str,
    name: str,
    kernel: str | None = "python3",
    image: str | None = None,
    procs: int | None = None,
    framework: str | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    accelerator: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    inputs: list[dict[str, str]] | None = None,
    max_run_time: str | None = None,
    priority: str | None = None,
    retries: int | None = None,
    outputs: str | None = None,
) -> dict[str, Any]:
    """The job spec running ``python <script>``; options left ``None`` take the spec's defaults.
    More than one process per node means ``framework: pytorch`` (torchrun) unless given."""
    environment = {k: v for k, v in (("kernel", kernel), ("image", image)) if v}
    spec: dict[str, Any] = {
        "name": name,
        "vc": vc,
        "environment": environment or dict(DEFAULT_ENVIRONMENT),
        "command": ["python", str(script)],
    }
    if framework is None and procs and procs > 1:
        framework = "pytorch"
    optional = {
        "framework": framework,
        "procs_per_node": procs,
        "cpu": cpu,
        "memory": memory,
        "accelerator": accelerator,
        "env": env or None,
        "inputs": inputs or None,
        "max_run_time": max_run_time,
        "priority": priority,
        "retries": retries,
        "outputs": outputs,
    }
    spec.update({k: v for k, v in optional.items() if v is not None})
    return spec


#: what a spec without ``environment`` runs in from ``yt job submit`` and ``%%yt job submit``:
#: the ``python3`` kernel's interpreter, as a notebook does
DEFAULT_ENVIRONMENT = {"kernel": "python3"}


def with_defaults(doc: dict[str, Any], vc: str | None, me: Any) -> dict[str, Any]:
    """A spec file's map with what ``%%yt`` fills in when it is left out (pure but for ``me``):
    ``vc`` (:func:`default_vc`, unless ``--vc`` gives it) and ``environment``."""
    doc = dict(doc)
    if not doc.get("vc") and not vc:
        doc["vc"] = default_vc(None, me)
    doc.setdefault("environment", dict(DEFAULT_ENVIRONMENT))
    return doc


def default_vc(given: str | None, me: Any) -> str:
    """``--vc``, else ``$YITONG_VC`` (the VC this server runs in), else your only VC.
    ``me`` is a callable returning ``/me`` (called only when needed)."""
    if given:
        return given
    if os.environ.get("YITONG_VC"):
        return os.environ["YITONG_VC"]
    vcs = me().get("vcs") or []
    if len(vcs) == 1:
        return vcs[0]
    if not vcs:
        raise ValueError("you are in no VC: ask an administrator to add you to one")
    raise ValueError(f"you are in VCs {', '.join(vcs)}: choose one with --vc")
