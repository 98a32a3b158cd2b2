"""Endpoints on the Kubernetes backend: each is a KServe InferenceService in its VC's namespace
(models/kserve.py builds it, models/kserve_client.py sends it).

Create and deploy copy the version's files into the data directory (the data volume, a
PersistentVolumeClaim KServe's storage initializer reads) and apply the InferenceService; a roll
is an update KServe carries out (a new revision takes the traffic once ready), a canary sets
``canaryTrafficPercent``. What the route needs later is saved in the row's ``engine``: the
object's namespace and name, the versions of the latest and previous revisions, the canary
share, the profile, and the predictor's cluster address once KServe reports it.

Quota: with ``backends.kubernetes.queue_endpoints`` (the default) the predictor's pod is a Kueue
workload of the VC's LocalQueue, as a job is: create and deploy first make the VC's namespace
and Kueue objects (its ClusterQueue holds the VC's quota), and while Kueue has not admitted the
pod the endpoint is ``queued``, "waiting for Kueue admission" (see :mod:`.kserve`). A canary
share is refused there (KServe's RawDeployment mode has none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anyio import to_thread
from sqlalchemy import select

from ..core.authz import Person
from ..core.errors import Refusal
from ..datasets.storage import Storage
from ..jobs.devices import BuildError
from ..jobs.runner_kube import KubeError
from ..vcs import catalog
from ..vcs.models import VC
from . import endpoints as ep
from . import kserve, replicas, rollout
from .kserve_client import KServeEndpoints
from .models import Endpoint

KIND = "kserve"


def is_kube(e: Endpoint) -> bool:
    return (e.engine or {}).get("kind") == KIND


def _prepare(
    storage: Storage, settings: Any, person: Person, client: KServeEndpoints, body: Any, existing: str | None
) -> dict[str, Any]:
    """Checks (422/404/409 with a sentence), the files in the data volume, and the manifest's values."""
    with storage.db.session() as s:
        e = None
        if existing is not None:
            e = ep.visible(s, person, existing)
            if not (person.admin or person.name == e.owner):
                raise Refusal(403, f"{person.name} may not deploy to endpoint {existing} of {e.owner}")
            if client.queued and any(int(share) < 100 for share in (getattr(body, "traffic", None) or {}).values()):
                raise Refusal(422, kserve.NO_CANARY)
        m, v, _runtime, uri, manifest = ep.files(storage, s, person, body.model)
        if e is not None and m.id != e.model_id:
            raise Refusal(422, f"endpoint {existing} serves another model, not {m.vc}/{m.name}")
        if e is None and s.scalar(select(Endpoint.id).where(Endpoint.name == body.name)) is not None:
            raise Refusal(409, f"endpoint {body.name} already exists")
        profile_name = str(body.profile or (e.engine.get("profile") if e is not None else "") or "")
        ep.check_profile(s, m.vc, profile_name)
        profile = catalog.get_profile(s, profile_name)
        try:
            kserve.model_format(v.framework)
            kserve.storage_uri(client.backend.kube.data_volume, "model")
        except BuildError as refused:
            raise Refusal(422, f"model {m.vc}/{m.name} v{v.number}: {refused}") from None
        facts = {
            "name": existing or body.name,
            "vc": m.vc,
            "model_id": m.id,
            "version_id": v.id,
            "number": v.number,
            "framework": v.framework,
            "profile": profile.name,
            "cpu": profile.cpu,
            "memory": profile.memory,
            "accelerator": profile.accelerator,
            "quota": dict(quota) if (quota := s.scalar(select(VC.quota).where(VC.name == m.vc))) is not None else None,
        }
    root, _uid = replicas.prepare_dir(storage, settings, person.name, facts["name"], v.number, manifest, "", uri)
    facts["dir"] = str(root)
    facts["subpath"] = str((root / "model" / uri).relative_to(Path(settings.data_dir).absolute()))
    return facts


def _manifest(client: KServeEndpoints, facts: dict[str, Any], canary: int | None) -> dict[str, Any]:
    try:
        return _build(client, facts, canary)
    except BuildError as refused:
        raise Refusal(422, f"endpoint {facts['name']}: {refused}") from None


def _build(client: KServeEndpoints, facts: dict[str, Any], canary: int | None) -> dict[str, Any]:
    return client.manifest(
        name=facts["name"],
        vc=facts["vc"],
        framework=facts["framework"],
        subpath=facts["subpath"],
        version=facts["number"],
        cpu=facts["cpu"],
        memory=facts["memory"],
        accelerator=facts["accelerator"],
        canary_percent=canary,
    )


async def _apply(client: KServeEndpoints, manifest: dict[str, Any], facts: dict[str, Any]) -> None:
    try:
        await client.ensure_queue(facts["vc"], facts["quota"])
        await client.apply(manifest)
    except KubeError as e:
        raise Refusal(503, f"the cluster refused InferenceService {manifest['metadata']['name']}: {e}") from None
    except ValueError as e:  # the VC's quota names a resource no Kueue ResourceFlavor covers
        raise Refusal(422, f"VC {facts['vc']}: {e}") from None


async def create(storage: Storage, settings: Any, person: Person, body: Any, client: KServeEndpoints) -> dict[str, Any]:
    facts = await to_thread.run_sync(_prepare, storage, settings, person, client, body, None)
    manifest = _manifest(client, facts, None)

    def insert() -> dict[str, Any]:
        with storage.db.writing() as s:
            if s.scalar(select(Endpoint.id).where(Endpoint.name == facts["name"])) is not None:
                raise Refusal(409, f"endpoint {facts['name']} already exists")
            e = Endpoint(
                name=facts["name"],
                vc=facts["vc"],
                owner=person.name,
                model_id=facts["model_id"],
                version_id=facts["version_id"],
                state="starting",
                replicas=[],
                engine={
                    "kind": KIND,
                    "namespace": manifest["metadata"]["namespace"],
                    "name": manifest["metadata"]["name"],
                    "latest": facts["number"],
                    "previous": None,
                    "canary": None,
                    "profile": facts["profile"],
                    "url": "",
                },
            )
            s.add(e)
            s.flush()
            return dict_of(s, e, {})

    out = await to_thread.run_sync(insert)
    try:
        await _apply(client, manifest, facts)
    except BaseException:
        await to_thread.run_sync(_forget, storage, settings, facts["name"])
        raise
    return out


async def deploy(
    storage: Storage, settings: Any, person: Person, name: str, body: Any, client: KServeEndpoints
) -> dict[str, Any]:
    facts = await to_thread.run_sync(_prepare, storage, settings, person, client, body, name)
    share = ep.share_of(body, facts["number"])
    await _apply(client, _manifest(client, facts, share if share < 100 else None), facts)

    def record() -> dict[str, Any]:
        with storage.db.writing() as s:
            e = ep.visible(s, person, name)
            engine = dict(e.engine)
            if engine["latest"] != facts["number"]:
                engine["previous"] = engine["latest"]
            engine.update(latest=facts["number"], canary=share if share < 100 else None, profile=facts["profile"])
            e.engine, e.version_id, e.state = engine, facts["version_id"], "starting"
            s.flush()
            return dict_of(s, e, {})

    return await to_thread.run_sync(record)


def traffic(engine: dict[str, Any], live: dict[str, int]) -> dict[str, int]:
    """KServe's ``latest``/``previous`` shares as versions' (``{"v1": 90, "v2": 10}``)."""
    out: dict[str, int] = {}
    for key, number in (("latest", engine.get("latest")), ("previous", engine.get("previous"))):
        if live.get(key) and number is not None:
            out[rollout.version_key(number)] = out.get(rollout.version_key(number), 0) + live[key]
    return out


def dict_of(session: Any, e: Endpoint, live: dict[str, Any]) -> dict[str, Any]:
    out = ep.endpoint_dict(session, e)
    if live:
        out.update(state=live["state"], reason=live["reason"], traffic=traffic(e.engine, live["traffic"]))
    else:
        out.update(state=e.state, reason=e.reason, traffic={rollout.version_key(e.engine["latest"]): 100})
    return out


async def show(storage: Storage, person: Person, name: str, client: KServeEndpoints) -> dict[str, Any]:
    """The endpoint with the InferenceService's live status (saved: the state and the address)."""

    def read() -> tuple[str, str]:
        with storage.db.session() as s:
            e = ep.visible(s, person, name)
            return e.vc, e.engine["name"]

    vc, obj = await to_thread.run_sync(read)
    try:
        live = await client.read(vc, obj)
    except KubeError as e:
        live = {"state": "unavailable", "reason": f"the cluster did not answer: {e}", "url": "", "traffic": {}}

    def save() -> dict[str, Any]:
        with storage.db.writing() as s:
            e = ep.visible(s, person, name)
            if live.get("address"):
                e.engine = {**e.engine, "url": live["address"]}
            e.state, e.reason = live["state"], live["reason"]
            s.flush()
            return dict_of(s, e, live)

    return await to_thread.run_sync(save)


def _forget(storage: Storage, settings: Any, name: str) -> None:
    with storage.db.writing() as s:
        e = s.scalar(select(Endpoint).where(Endpoint.name == name))
        if e is not None:
            s.delete(e)
    ep.remove_files(settings, name)


async def delete(storage: Storage, settings: Any, person: Person, name: str, client: KServeEndpoints) -> None:
    def check() -> tuple[str, str]:
        with storage.db.session() as s:
            e = ep.visible(s, person, name)
            if not (person.admin or person.name == e.owner):
                raise Refusal(403, f"{person.name} may not delete endpoint {name} of {e.owner}")
            return e.vc, e.engine["name"]

    vc, obj = await to_thread.run_sync(check)
    try:
        await client.delete(vc, obj)
    except KubeError as e:
        raise Refusal(503, f"the cluster did not delete InferenceService {obj}: {e}") from None
    await to_thread.run_sync(_forget, storage, settings, name)
