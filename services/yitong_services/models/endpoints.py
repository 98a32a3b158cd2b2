"""Endpoints: a model version served by MLServer replicas, each a job of the endpoint's VC (I/O;
call from a worker thread).

Create: the version must have a runtime (its framework) and one model file, the VC must offer the
profile; a replica is prepared (models/replicas.py) and its job queued like any job of the owner:
it waits, with the queue's reason, while the VC's quota is full and starts when capacity frees
(jobs/queue.py admits it; no second quota check here). Deploy: a replica of another version joins
and takes its share of traffic (models/rollout.py); the endpoint driver (models/driver.py) routes
it once ready and drains the replicas whose share went to 0. Delete cancels every replica's job.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.authz import Person, is_member
from ..core.errors import Refusal
from ..datasets.models import DatasetVersion
from ..datasets.objindex import locate
from ..datasets.storage import Storage
from ..jobs.models import Job
from ..vcs import catalog
from ..vcs.allocations import release
from ..vcs.models import Allocation
from ..vcs.quantities import Resources
from . import endpoint_keys, replicas, rollout, runtimes
from . import records as models
from .models import Endpoint, Model, ModelVersion


def visible(session: Session, person: Person, name: str) -> Endpoint:
    e = session.scalar(select(Endpoint).where(Endpoint.name == name))
    if e is None or not (person.admin or is_member(person, catalog.get_vc(session, e.vc).groups)):
        raise Refusal(404, f"there is no endpoint {name}")
    return e


def job_states(session: Session, reps: list[dict[str, Any]]) -> dict[int, tuple[str, str]]:
    ids = [r["job"] for r in reps]
    return {
        i: (st, why) for i, st, why in session.execute(select(Job.id, Job.state, Job.reason).where(Job.id.in_(ids)))
    }


def endpoint_dict(session: Session, e: Endpoint) -> dict[str, Any]:
    m = session.get(Model, e.model_id)
    v = session.get(ModelVersion, e.version_id)
    assert m is not None and v is not None
    reps = list(e.replicas or [])
    jobs = job_states(session, reps)
    state, reason = rollout.state(reps, jobs) if reps else (e.state, e.reason)
    return {
        "name": e.name,
        "vc": e.vc,
        "owner": e.owner,
        "model": models.full_name(m),
        "version": v.number,
        "state": state,
        "reason": reason,
        "created": e.created,
        "url": f"endpoints/{e.name}/v2/models/{e.name}",
        "traffic": rollout.traffic(reps),
        "replicas": [
            {
                "version": r["number"],
                "job": r["job"],
                "job_state": jobs.get(r["job"], ("gone", ""))[0],
                "weight": r["weight"],
                "routed": bool(r.get("routed")),
                "draining": r.get("draining") is not None,
            }
            for r in reps
        ],
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


def files(storage: Storage, session: Session, person: Person, ref: str) -> tuple[Model, ModelVersion, str, str, str]:
    """The model version ``vc/name@ref``, MLServer's runtime for it, the file it loads and the
    version's manifest (422 with a sentence when no runtime serves it)."""
    vc, _, rest = ref.partition("/")
    name, _, at = rest.partition("@")
    m = models.visible(session, person, vc, name)
    v = models.resolve(session, m, at or "latest")
    runtime, uri = _runtime(storage, session, f"model {vc}/{name} v{v.number}", v)
    dv = session.get(DatasetVersion, v.dataset_version_id)
    assert dv is not None
    return m, v, runtime, uri, dv.manifest


def check_profile(session: Session, vc: str, name: str) -> None:
    profile = catalog.get_profile(session, name)
    if profile.name not in catalog.get_vc(session, vc).profiles:
        raise Refusal(422, f"VC {vc} does not offer profile {profile.name}")


def _replica(number: int, version_id: int, job: int, port: int, root: Path, profile: str) -> dict[str, Any]:
    return {
        "job": job,
        "version_id": version_id,
        "number": number,
        "port": port,
        "dir": str(root),
        "profile": profile,
        "weight": 0,
        "routed": False,
        "draining": None,
    }


def create(
    storage: Storage, settings: Any, person: Person, body: Any, inventory: Resources, backend: str
) -> dict[str, Any]:
    with storage.db.session() as s:
        m, v, runtime, uri, manifest = files(storage, s, person, body.model)
        if s.scalar(select(Endpoint.id).where(Endpoint.name == body.name)) is not None:
            raise Refusal(409, f"endpoint {body.name} already exists")
        check_profile(s, m.vc, body.profile)
        vc, model_id, version_id, number = m.vc, m.id, v.id, v.number
    root, port = replicas.prepare_dir(storage, settings, person.name, body.name, number, manifest, runtime, uri)
    try:
        with storage.db.locked("~jobs") as s:
            if s.scalar(select(Endpoint.id).where(Endpoint.name == body.name)) is not None:
                raise Refusal(409, f"endpoint {body.name} already exists")
            profile = catalog.get_profile(s, body.profile)
            job = replicas.submit(s, person, body.name, vc, number, root, profile, inventory, backend, runtime)
            first = _replica(number, version_id, job, port, root, profile.name) | {"weight": 100}
            e = Endpoint(
                name=body.name,
                vc=vc,
                owner=person.name,
                model_id=model_id,
                version_id=version_id,
                state="queued",
                replicas=[first],
            )
            s.add(e)
            s.flush()
            return endpoint_dict(s, e)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def share_of(body: Any, number: int) -> int:
    """The new version's share from ``traffic`` (``{"v2": 10}``; none: 100)."""
    if not body.traffic:
        return 100
    key = rollout.version_key(number)
    other = sorted(set(body.traffic) - {key})
    if other:
        raise Refusal(422, f"traffic names {', '.join(other)}; give the share of the deployed version {key} only")
    return int(body.traffic[key])


def deploy(
    storage: Storage, settings: Any, person: Person, name: str, body: Any, inventory: Resources, backend: str
) -> dict[str, Any]:
    """Roll endpoint ``name`` to a version of its model, or give that version ``share`` percent."""
    with storage.db.session() as s:
        e = visible(s, person, name)
        if not (person.admin or person.name == e.owner):
            raise Refusal(403, f"{person.name} may not deploy to endpoint {name} of {e.owner}")
        m, v, runtime, uri, manifest = files(storage, s, person, body.model)
        if m.id != e.model_id:
            raise Refusal(
                422,
                f"endpoint {name} serves model {models.full_name(s.get(Model, e.model_id))}, not {models.full_name(m)}",
            )
        share = share_of(body, v.number)
        reps = list(e.replicas or [])
        last = rollout.primary(reps)
        profile_name = body.profile or (last["profile"] if last else "")
        if not profile_name:
            raise Refusal(422, f"endpoint {name} has no replica to take the profile from; give profile")
        check_profile(s, e.vc, profile_name)
        running = any(r["number"] == v.number and r.get("draining") is None for r in reps)
        vc, number, version_id = e.vc, v.number, v.id
    root = None
    if not running:
        root, port = replicas.prepare_dir(storage, settings, person.name, name, number, manifest, runtime, uri)
    try:
        with storage.db.locked("~jobs") as s:
            e = visible(s, person, name)
            reps = [dict(r) for r in e.replicas or []]
            if root is not None and not any(r["number"] == number and r.get("draining") is None for r in reps):
                profile = catalog.get_profile(s, profile_name)
                job = replicas.submit(s, person, name, vc, number, root, profile, inventory, backend, runtime)
                reps.append(_replica(number, version_id, job, port, root, profile.name))
                root = None  # in use
            weights = rollout.target_weights(reps, number, share)
            for r in reps:
                r["weight"] = weights.get(r["job"], 0)
            e.replicas = reps
            top = rollout.primary(reps)
            if top is not None:
                e.version_id = top["version_id"]
            s.flush()
            return endpoint_dict(s, e)
    finally:
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


def stop(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def delete(storage: Storage, settings: Any, person: Person, name: str) -> list[int]:
    """Forget the endpoint; the jobs of its replicas, for the caller to cancel."""
    with storage.db.locked("~jobs") as s:
        e = visible(s, person, name)
        if not (person.admin or person.name == e.owner):
            raise Refusal(403, f"{person.name} may not delete endpoint {name} of {e.owner}")
        pid, jobs = e.pid, [r["job"] for r in e.replicas or []]
        if e.allocation_id is not None:
            a = s.get(Allocation, e.allocation_id)
            if a is not None:
                release(s, a)
        endpoint_keys.drop_all(s, e.id)
        s.delete(e)
    if pid:
        stop(pid)
    return jobs


def remove_files(settings: Any, name: str) -> None:
    shutil.rmtree(Path(settings.data_dir).absolute() / "endpoints" / name, ignore_errors=True)
