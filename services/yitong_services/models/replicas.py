"""One replica of an endpoint: its directory (the version's files, MLServer's settings) and the
job that runs MLServer there (I/O apart from :func:`replica_spec`; call from a worker thread).

The job is an ordinary job of the endpoint's owner in the endpoint's VC (jobs/records.py
``create``): it queues when the VC's quota is full, holds a job allocation of the profile's
resources while it runs, runs as the owner's account in multi-user mode (as every local job),
and its log is MLServer's.

The directory ``<data_dir>/endpoints/<endpoint>/v<n>-<random>/`` is the replica's own: owned
by the owner's account (multi-user), 0700, its files 0600, inside platform folders other
accounts may pass through but not list (0711). MLServer serves there on the unix socket
``mlserver.SOCKET`` (replica_server.py), so no other account can read the settings or the
model, connect to the replica, or bind its address first; the route and the readiness check
also check that the socket's listener runs as ``uid``, the account saved in the replica.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from ..core.authz import Person
from ..core.confinement import account_for, private_dir
from ..datasets.materialize import materialize
from ..datasets.storage import Storage
from ..jobs import records as jobs
from ..jobs.spec import spec_from_dict
from ..vcs.models import Profile
from ..vcs.quantities import Resources
from . import mlserver, runtimes


def job_name(endpoint: str, number: int) -> str:
    """``<endpoint>-v<n>``, cut to a job name's 32 characters."""
    suffix = f"-v{number}"
    return endpoint[: 32 - len(suffix)].rstrip("-") + suffix


def replica_spec(
    *,
    endpoint: str,
    number: int,
    vc: str,
    root: str,
    profile: dict[str, Any],
    command: list[str],
    python_path: str = "",
) -> dict[str, Any]:
    """The job spec of a replica: ``command`` (``mlserver.command``: MLServer on the replica's
    socket) with the profile's resources, the platform's runtime classes (and a custom version's
    own folder) on ``PYTHONPATH``, and no hub token: a model server never calls the platform, and
    a version's code must not act as its owner."""
    spec: dict[str, Any] = {
        "name": job_name(endpoint, number),
        "vc": vc,
        "environment": {"kernel": profile.get("kernel") or "python3"},
        "command": list(command),
        "cpu": profile["cpu"],
        "memory": profile["memory"],
        "env": {"PYTHONUNBUFFERED": "1", **({"PYTHONPATH": python_path} if python_path else {})},
        "hub_token": False,
    }
    if profile.get("accelerator"):
        spec["accelerator"] = profile["accelerator"]
    return spec


def prepare_dir(
    storage: Storage, settings: Any, owner: str, endpoint: str, number: int, manifest: str, runtime: str, uri: str
) -> tuple[Path, int]:
    """``<data_dir>/endpoints/<endpoint>/v<n>-<random>/``: the version's files and MLServer's
    settings, in a folder only the replica's account can enter (its own in multi-user mode,
    0700; the folders above are the platform's, 0711); that account's uid."""
    endpoints = private_dir(Path(settings.data_dir).absolute() / "endpoints", 0o711)
    base = private_dir(endpoints / endpoint, 0o711)
    account = account_for(settings, owner)
    if account is not None and os.lstat(base).st_uid != os.geteuid():  # an earlier release gave it to an owner
        os.chown(base, os.geteuid(), os.getegid(), follow_symlinks=False)
    root = base / f"v{number}-{secrets.token_hex(4)}"
    root.mkdir(mode=0o700)
    shutil.copytree(materialize(storage, manifest), root / "model")
    (root / "settings.json").write_text(json.dumps(mlserver.settings()))
    # custom Python (no file): the version's folder is on the path and its class is the runtime
    model_settings = mlserver.model_settings(endpoint, runtime, str(root / "model" / uri), f"v{number}")
    (root / "model-settings.json").write_text(json.dumps(model_settings))
    for p in [root, *root.rglob("*")]:
        if account is not None:
            os.chown(p, account["uid"], account["gid"], follow_symlinks=False)
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o700)
        elif p.is_file() and not p.is_symlink():
            p.chmod(0o600)
    return root, (account["uid"] if account is not None else os.geteuid())


def submit(
    session: Session,
    person: Person,
    endpoint: str,
    vc: str,
    number: int,
    root: Path,
    profile: Profile,
    inventory: Resources,
    backend: str,
    runtime: str = "",
    env_status: Path | None = None,
) -> int:
    """Queue the replica's job (the caller holds the ``~jobs`` lock); its id. ``env_status``: the
    status file of MLServer's environment's build when it is not there yet (the replica waits)."""
    spec = replica_spec(
        endpoint=endpoint,
        number=number,
        vc=vc,
        root=str(root),
        profile={
            "cpu": profile.cpu,
            "memory": profile.memory,
            "accelerator": profile.accelerator,
            "kernel": profile.kernel,
        },
        command=mlserver.command(root, env_status),
        python_path=python_path(root, runtime),
    )
    return jobs.create(session, person, spec_from_dict(spec), {}, inventory, backend).id


def python_path(root: Path, runtime: str) -> str:
    """What a replica imports beside MLServer: the platform's runtime classes (``yitong_lab``:
    ONNX) and, for a custom-Python version (an implementation that is not one of the known
    runtimes'), the version's own folder after them."""
    custom = not any(runtime == r.implementation for r in runtimes.RUNTIMES if r.implementation)
    return mlserver.environment(root, custom)["PYTHONPATH"]
