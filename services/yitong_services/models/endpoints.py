"""Endpoints: a model version served by MLServer as the VC owner's process (I/O; call from a
worker thread).

Create: the version must have a runtime (its framework) and one model file; an allocation of
the endpoint's profile is taken in the VC (refused with the quota sentence when full); the
version's files are materialised and copied into ``<data_dir>/endpoints/<name>/`` with MLServer's
``settings.json`` and ``model-settings.json``, and ``mlserver start`` runs there on a free
loopback port, in its own session, as the owner's account in multi-user mode (never with the
service's token or environment). Delete stops the process group and releases the allocation.
The server outlives a restart of the service (its port and pid are in the row), like a job does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.authz import Person, is_member
from ..core.confinement import account_for
from ..core.errors import Refusal
from ..datasets.materialize import materialize
from ..datasets.models import DatasetVersion
from ..datasets.objindex import locate
from ..datasets.storage import Storage
from ..jobs.runner_local import drop_to
from ..vcs import catalog
from ..vcs.allocations import allocate, release
from ..vcs.models import Allocation
from ..vcs.quantities import Resources
from ..vcs.schemas import AllocationIn
from . import endpoint_keys, mlserver, runtimes
from . import records as models
from .models import Endpoint, Model, ModelVersion

KIND = "endpoint"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def visible(session: Session, person: Person, name: str) -> Endpoint:
    e = session.scalar(select(Endpoint).where(Endpoint.name == name))
    if e is None or not (person.admin or is_member(person, catalog.get_vc(session, e.vc).groups)):
        raise Refusal(404, f"there is no endpoint {name}")
    return e


def endpoint_dict(session: Session, e: Endpoint) -> dict[str, Any]:
    m = session.get(Model, e.model_id)
    v = session.get(ModelVersion, e.version_id)
    assert m is not None and v is not None
    return {
        "name": e.name,
        "vc": e.vc,
        "owner": e.owner,
        "model": models.full_name(m),
        "version": v.number,
        "state": e.state,
        "reason": e.reason,
        "created": e.created,
        "url": f"endpoints/{e.name}/v2/models/{e.name}",
    }


def _source(storage: Storage, session: Session, files: list[dict[str, Any]], path: str) -> bytes | None:
    """The bytes of one file of a version, read from the store; None when it is larger than
    the check reads."""
    entry = next(f for f in files if f["path"] == path)
    loc = locate(session, [entry["hash"]]).get(entry["hash"])
    if loc is None:
        return b""
    if loc.size > runtimes.MAX_SOURCE:
        return None
    return b"".join(storage.chunks(loc, 0, loc.size))


def _runtime(storage: Storage, session: Session, what: str, v: ModelVersion) -> tuple[str, str]:
    """(MLServer's implementation, the file or folder it loads relative to the version's files),
    or a 422 with a sentence: an unknown framework names the supported ones."""
    runtime = runtimes.choose(v.framework, v.format)
    if runtime is None:
        fmt = f" (format {v.format})" if v.format else ""
        raise Refusal(
            422,
            f"{what} has framework {v.framework or '(none)'}{fmt}; endpoints serve {runtimes.supported()}",
        )
    dv = session.get(DatasetVersion, v.dataset_version_id)
    assert dv is not None
    files = storage.manifest(dv.manifest)["files"]
    uri = runtimes.model_file(runtime, [f["path"] for f in files])
    if uri is None:
        kinds = ", ".join(runtime.suffixes)
        raise Refusal(
            422, f"{what} has no single {runtime.name} model file ({kinds}) to load; name it model{runtime.suffixes[0]}"
        )
    if runtime.implementation:
        return runtime.implementation, uri
    module = runtimes.module_name(uri)
    if module is None:
        raise Refusal(422, f"{what}: {uri} cannot be imported as a module; name it model.py")
    source = _source(storage, session, files, uri)
    classes = runtimes.mlmodel_classes(source) if source is not None else runtimes.TOO_LARGE
    if isinstance(classes, str):
        raise Refusal(422, f"{what}: {uri} {classes}")
    if len(classes) != 1:
        found = f" ({', '.join(classes)})" if classes else ""
        raise Refusal(
            422, f"{what}: {uri} has {len(classes)} classes deriving from mlserver.MLModel{found}; it needs one"
        )
    return f"{module}.{classes[0]}", ""


def _prepare(storage: Storage, session: Session, person: Person, body: Any) -> tuple[Model, ModelVersion, str, str]:
    vc, _, rest = body.model.partition("/")
    name, _, ref = rest.partition("@")
    m = models.visible(session, person, vc, name)
    v = models.resolve(session, m, ref or "latest")
    runtime, uri = _runtime(storage, session, f"model {vc}/{name} v{v.number}", v)
    if session.scalar(select(Endpoint.id).where(Endpoint.name == body.name)) is not None:
        raise Refusal(409, f"endpoint {body.name} already exists")
    return m, v, runtime, uri


def create(storage: Storage, settings: Any, person: Person, body: Any, inventory: Resources) -> dict[str, Any]:
    with storage.db.session() as s:
        m, v, runtime, uri = _prepare(storage, s, person, body)
        vc, model_id, version_id, number = m.vc, m.id, v.id, v.number
        manifest = s.get(DatasetVersion, v.dataset_version_id).manifest  # type: ignore[union-attr]
    alloc_in = AllocationIn.model_construct(
        user=None, vc=vc, profile=body.profile, kind=KIND, ref=f"endpoint/{body.name}"
    )
    allocation, created = allocate(storage.db, person, alloc_in, inventory)
    if not created:  # another create of the same name got there first
        raise Refusal(409, f"endpoint {body.name} already exists")
    try:
        return _start(
            storage,
            settings,
            person,
            body.name,
            vc,
            model_id,
            version_id,
            number,
            manifest,
            runtime,
            uri,
            allocation["id"],
        )
    except BaseException:
        with storage.db.writing() as s:
            a = s.get(Allocation, allocation["id"])
            if a is not None:
                release(s, a)
        raise


def _start(
    storage: Storage,
    settings: Any,
    person: Person,
    name: str,
    vc: str,
    model_id: int,
    version_id: int,
    number: int,
    manifest: str,
    runtime: str,
    uri: str,
    allocation_id: int,
) -> dict[str, Any]:
    root = Path(settings.data_dir).absolute() / "endpoints" / name
    shutil.rmtree(root, ignore_errors=True)
    (root / "model").parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(materialize(storage, manifest), root / "model")
    port = free_port()
    (root / "settings.json").write_text(json.dumps(mlserver.settings(port)))
    model_settings = mlserver.model_settings(name, runtime, str(root / "model" / uri), f"v{number}")
    if not uri:  # custom Python: the version's folder is on the path, its class the runtime
        model_settings["parameters"]["uri"] = str(root / "model")
    (root / "model-settings.json").write_text(json.dumps(model_settings))
    account = account_for(settings, person.name)
    extra: dict[str, Any] = {}
    if account is not None:
        for p in [root, *root.rglob("*")]:
            os.chown(p, account["uid"], account["gid"], follow_symlinks=False)
        extra["preexec_fn"] = partial(drop_to, account["uid"], account["gid"])
    for p in [root, *root.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o700)
        elif p.is_file() and not p.is_symlink():
            p.chmod(0o600)
    env = mlserver.environment(root, custom=not uri)
    with open(root / "mlserver.log", "ab") as log:
        proc = subprocess.Popen(
            [mlserver.executable(), "start", str(root)],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **extra,
        )
    with storage.db.writing() as s:
        e = Endpoint(
            name=name,
            vc=vc,
            owner=person.name,
            model_id=model_id,
            version_id=version_id,
            allocation_id=allocation_id,
            port=port,
            pid=proc.pid,
            state="starting",
        )
        s.add(e)
        s.flush()
        return endpoint_dict(s, e)


def stop(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def delete(storage: Storage, settings: Any, person: Person, name: str) -> None:
    with storage.db.writing() as s:
        e = visible(s, person, name)
        if not (person.admin or person.name == e.owner):
            raise Refusal(403, f"{person.name} may not delete endpoint {name} of {e.owner}")
        pid = e.pid
        if e.allocation_id is not None:
            a = s.get(Allocation, e.allocation_id)
            if a is not None:
                release(s, a)
        endpoint_keys.drop_all(s, e.id)
        s.delete(e)
    stop(pid)
    shutil.rmtree(Path(settings.data_dir).absolute() / "endpoints" / name, ignore_errors=True)
