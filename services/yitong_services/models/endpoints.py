"""Endpoints: a model version served by MLServer replicas, each a job of the endpoint's VC (I/O;
call from a worker thread).

Create: the version must have a runtime (its framework) and one model file, the VC must offer the
profile; a replica is prepared (models/replicas.py) and its job queued like any job of the owner:
it waits, with the queue's reason, while the VC's quota is full and starts when capacity frees
(jobs/queue.py admits it; no second quota check here); ``replicas`` of them. Deploy: replicas of
another version join and take its share of traffic (models/rollout.py); the endpoint driver
(models/driver.py) routes each once ready and drains the replicas whose share went to 0. Scale:
replicas are added to (queued like jobs) or drained from every version with a share. Delete
cancels every replica's job.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
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
from ..jobs.states import TERMINAL
from ..vcs import catalog
from ..vcs.allocations import release
from ..vcs.models import Allocation
from ..vcs.quantities import Resources
from . import endpoint_keys, mlserver, mlserver_env, replicas, rollout, runtimes
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
    state, reason = rollout.state(reps, jobs, e.scale or 1) if reps else (e.state, e.reason)
    if state in ("starting", "failed"):  # its replica may be waiting on (or failed for) MLServer's environment
        env = mlserver_env.current()
        if env is not None and env.state in ("building", "failed"):
            reason = env.words()
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
        "scale": e.scale or 1,
        "replicas": [
            {
                "version": r["number"],
                "job": r["job"],
                "job_state": jobs.get(r["job"], ("gone", ""))[0],
                "job_reason": jobs.get(r["job"], ("gone", ""))[1],
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


def _replica(number: int, version_id: int, job: int, uid: int, root: Path, profile: str) -> dict[str, Any]:
    """A replica's record: its MLServer answers on ``socket`` (in ``dir``) as the account ``uid``."""
    return {
        "job": job,
        "version_id": version_id,
        "number": number,
        "socket": str(root / mlserver.SOCKET),
        "uid": uid,
        "dir": str(root),
        "profile": profile,
        "weight": 0,
        "routed": False,
        "draining": None,
    }


ENDED = TERMINAL | {"gone"}


class _Prepared:
    """Replica directories made outside the lock (copying a version's files takes a while), with
    the uid each replica runs as, by version number; the ones left unused are removed."""

    def __init__(self, env_status: Path | None = None) -> None:
        self.env_status = env_status  # MLServer's environment is being built: its status file
        self.dirs: dict[int, list[tuple[Path, int]]] = {}
        self.how: dict[int, tuple[int, str, str]] = {}  # number -> (version id, runtime, profile)

    def make(
        self, storage: Storage, settings: Any, owner: str, endpoint: str, version: tuple[int, int, str, str, str, str]
    ) -> None:
        number, version_id, manifest, runtime, uri, profile = version
        self.how[number] = (version_id, runtime, profile)
        made = replicas.prepare_dir(storage, settings, owner, endpoint, number, manifest, runtime, uri)
        self.dirs.setdefault(number, []).append(made)

    def take(self, number: int) -> tuple[Path, int] | None:
        left = self.dirs.get(number) or []
        return left.pop() if left else None

    def remove(self) -> None:
        for left in self.dirs.values():
            for root, _uid in left:
                shutil.rmtree(root, ignore_errors=True)
        self.dirs.clear()


def _versions(
    storage: Storage, session: Session, person: Person, e: Endpoint, add: dict[int, int], known: dict[int, tuple]
) -> list[tuple[int, int, str, str, str, str]]:
    """(number, version id, manifest, runtime, file, profile) of every replica to add."""
    m = session.get(Model, e.model_id)
    assert m is not None
    out = []
    for number, n in add.items():
        if number not in known:
            _m, v, runtime, uri, manifest = files(storage, session, person, f"{models.full_name(m)}@{number}")
            profile = next((r["profile"] for r in e.replicas or [] if r["number"] == number), "")
            known[number] = (number, v.id, manifest, runtime, uri, profile)
        out += [known[number]] * n
    return out


def _without_ended(session: Session, e: Endpoint) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The endpoint's replicas, less those that never joined the route and whose jobs ended
    (failed, cancelled): a deploy or scale replaces them; and those."""
    reps = [dict(r) for r in e.replicas or []]
    states = job_states(session, reps)
    ended = [
        r
        for r in reps
        if not r.get("routed") and r.get("draining") is None and states.get(r["job"], ("gone",))[0] in ENDED
    ]
    return [r for r in reps if r not in ended], ended


def _apply(
    session: Session,
    person: Person,
    e: Endpoint,
    count: int,
    number: int | None,
    share: int,
    prepared: _Prepared,
    inventory: Resources,
    backend: str,
) -> list[str]:
    """Under the ``~jobs`` lock: weights for a deploy of ``number`` (none: a scale), ``count``
    replicas of every version with a share (jobs queued for the new ones from ``prepared``; the
    extra ones drain); replicas that never joined the route and whose jobs ended are dropped.
    The directories of the dropped ones, for the caller to remove."""
    reps, ended = _without_ended(session, e)
    reps, add, shares, drop = rollout.plan(reps, count, number, share)
    now = time.time()
    for r in reps:
        if r["job"] in drop:
            r["weight"], r["routed"], r["draining"] = 0, False, now
    for n, how_many in add.items():
        for _ in range(how_many):
            made = prepared.take(n)
            if made is None:  # the replicas changed between the plan and the lock: the next scale adds it
                break
            version_id, runtime, profile_name = prepared.how[n]
            profile = catalog.get_profile(session, profile_name)
            root, uid = made
            job = replicas.submit(
                session, person, e.name, e.vc, n, root, profile, inventory, backend, runtime, prepared.env_status
            )
            reps.append(_replica(n, version_id, job, uid, root, profile.name) | {"weight": shares[n]})
    e.replicas, e.scale = reps, count
    top = rollout.primary(reps)
    if top is not None:
        e.version_id = top["version_id"]
    return [r["dir"] for r in ended]


def create(
    storage: Storage, settings: Any, person: Person, body: Any, inventory: Resources, backend: str
) -> dict[str, Any]:
    with storage.db.session() as s:
        m, v, runtime, uri, manifest = files(storage, s, person, body.model)
        if s.scalar(select(Endpoint.id).where(Endpoint.name == body.name)) is not None:
            raise Refusal(409, f"endpoint {body.name} already exists")
        check_profile(s, m.vc, body.profile)
        vc, model_id, version_id, number = m.vc, m.id, v.id, v.number
    prepared = _Prepared(mlserver_env.ensure_status(settings))  # a refused create builds nothing
    try:
        for _ in range(body.replicas):
            version = (number, version_id, manifest, runtime, uri, body.profile)
            prepared.make(storage, settings, person.name, body.name, version)
        with storage.db.locked("~jobs") as s:
            if s.scalar(select(Endpoint.id).where(Endpoint.name == body.name)) is not None:
                raise Refusal(409, f"endpoint {body.name} already exists")
            e = Endpoint(
                name=body.name,
                vc=vc,
                owner=person.name,
                model_id=model_id,
                version_id=version_id,
                state="queued",
                replicas=[],
            )
            _apply(s, person, e, body.replicas, number, 100, prepared, inventory, backend)
            s.add(e)
            s.flush()
            return endpoint_dict(s, e)
    finally:
        prepared.remove()


def share_of(body: Any, number: int) -> int:
    """The new version's share from ``traffic`` (``{"v2": 10}``; none: 100)."""
    if not body.traffic:
        return 100
    key = rollout.version_key(number)
    other = sorted(set(body.traffic) - {key})
    if other:
        raise Refusal(422, f"traffic names {', '.join(other)}; give the share of the deployed version {key} only")
    return int(body.traffic[key])


def _owned(session: Session, person: Person, name: str, what: str) -> Endpoint:
    e = visible(session, person, name)
    if not (person.admin or person.name == e.owner):
        raise Refusal(403, f"{person.name} may not {what} endpoint {name} of {e.owner}")
    return e


def deploy(
    storage: Storage, settings: Any, person: Person, name: str, body: Any, inventory: Resources, backend: str
) -> dict[str, Any]:
    """Roll endpoint ``name`` to a version of its model, or give that version ``share`` percent,
    on ``body.replicas`` replicas per version (default: the current count)."""
    with storage.db.session() as s:
        e = _owned(s, person, name, "deploy to")
        m, v, runtime, uri, manifest = files(storage, s, person, body.model)
        if m.id != e.model_id:
            raise Refusal(
                422,
                f"endpoint {name} serves model {models.full_name(s.get(Model, e.model_id))}, not {models.full_name(m)}",
            )
        share = share_of(body, v.number)
        reps, _ended = _without_ended(s, e)
        last = rollout.primary(list(e.replicas or []))
        profile_name = body.profile or (last["profile"] if last else "")
        if not profile_name:
            raise Refusal(422, f"endpoint {name} has no replica to take the profile from; give profile")
        check_profile(s, e.vc, profile_name)
        count, number = body.replicas or e.scale or 1, v.number
        _reps, add, _shares, _drop = rollout.plan(reps, count, number, share)
        known = {number: (number, v.id, manifest, runtime, uri, profile_name)}
        todo = _versions(storage, s, person, e, add, known)
    return _carry_out(storage, settings, person, name, todo, count, number, share, inventory, backend)


def scale(
    storage: Storage, settings: Any, person: Person, name: str, count: int, inventory: Resources, backend: str
) -> dict[str, Any]:
    """Run ``count`` replicas of every version of endpoint ``name`` with a share: new ones queue
    like jobs (past the VC's quota they wait, with the queue's reason in the endpoint's state);
    extra ones drain and stop (queued or starting ones first). Scaling to the same count replaces
    replicas whose jobs ended."""
    with storage.db.session() as s:
        e = _owned(s, person, name, "scale")
        if not e.replicas:
            raise Refusal(422, f"endpoint {name} has no replica to scale; deploy a version")
        _reps, add, _shares, _drop = rollout.plan(_without_ended(s, e)[0], count)
        todo = _versions(storage, s, person, e, add, {})
    return _carry_out(storage, settings, person, name, todo, count, None, 100, inventory, backend)


def _carry_out(
    storage: Storage,
    settings: Any,
    person: Person,
    name: str,
    todo: list[Any],
    count: int,
    number: int | None,
    share: int,
    inventory: Resources,
    backend: str,
) -> dict[str, Any]:
    """Make the new replicas' directories (no lock held), apply the plan under the jobs lock, then
    remove what the plan let go: what deploy and scale share."""
    prepared = _Prepared(mlserver_env.ensure_status(settings))
    try:
        for version in todo:
            prepared.make(storage, settings, person.name, name, version)
        with storage.db.locked("~jobs") as s:
            e = visible(s, person, name)
            gone = _apply(s, person, e, count, number, share, prepared, inventory, backend)
            s.flush()
            out = endpoint_dict(s, e)
    finally:
        prepared.remove()
    for root in gone:
        shutil.rmtree(root, ignore_errors=True)
    return out


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
        e = _owned(s, person, name, "delete")
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
