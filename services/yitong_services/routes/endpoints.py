"""Endpoints: deploy a model version (Open Inference Protocol, served by MLServer replicas that
queue like jobs), roll to another version or give it a canary share, list, show, delete;
``/endpoints/{name}/v2/...`` passes health, metadata and infer through to a routed replica."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select
from starlette.routing import Route

from ..core.authz import Person, is_member
from ..core.context import Context
from ..core.errors import Refusal
from ..models import endpoints as ep
from ..models import endpoints_kube as kube
from ..models.kserve_client import KServeEndpoints
from ..models.models import Endpoint
from ..models.schemas import EndpointDeployIn, EndpointIn, EndpointOut, EndpointScaleIn
from ..vcs.models import VC
from .common import Caller, Ctx, as_person
from .endpoints_v2 import v2_app

router = APIRouter(prefix="/endpoints", tags=["endpoints"])


def kserve(request: Request) -> KServeEndpoints | None:
    """The InferenceService client where the job backend is Kubernetes (endpoints are KServe's there)."""
    backend = request.app.state.jobs.backend
    if backend.name != "kubernetes":
        return None
    found = getattr(request.app.state, "kserve", None)
    if found is None:
        found = request.app.state.kserve = KServeEndpoints(backend)
    return found


@router.get("", response_model=list[EndpointOut])
def list_endpoints(caller: Caller, ctx: Ctx) -> list[dict]:
    """Endpoints of the caller's VCs."""
    person = as_person(caller)
    with ctx.db.session() as s:
        mine = {v.name for v in s.scalars(select(VC)) if is_member(person, v.groups)}
        return [ep.endpoint_dict(s, e) for e in s.scalars(select(Endpoint).order_by(Endpoint.name)) if e.vc in mine]


@router.post("", response_model=EndpointOut, status_code=201)
async def create_endpoint(body: EndpointIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Members of the model's VC: serve a version (``vc/name@ref``) on ``replicas`` replicas
    (1-8), each holding the resources of ``profile``. Each replica is a job of the caller in the
    VC: ``state`` is ``queued`` (with the queue's reason, naming the quota and VC) while the VC's
    quota is full, then ``starting``, then ``ready`` once a server answers; 422 for a request
    the VC's quota can never hold. On Kubernetes the endpoint is a KServe InferenceService in the
    VC's namespace (one replica), ``queued`` ("waiting for Kueue admission") while Kueue holds
    its pod in the VC's queue."""
    mgr, client = request.app.state.jobs, kserve(request)
    if client is not None:
        _one_replica_on_kube(body.replicas)
        return await kube.create(ctx.storage, ctx.settings, as_person(caller), body, client)
    args = (ctx.storage, ctx.settings, as_person(caller), body, ctx.inventory, mgr.backend.name)
    out = await run_in_threadpool(ep.create, *args)
    mgr.wake()
    return out


@router.post("/{name}/deploy", response_model=EndpointOut)
async def deploy_endpoint(name: str, body: EndpointDeployIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """The owner or an admin: roll the endpoint to another version of its model (``vc/name@ref``)
    without an unanswered request (the new replicas start, each joins the route once ready, then
    the old ones drain and stop; ``replicas`` per version, default the current count), or give it
    a canary share (``traffic: {"v2": 10}``: 10 of every 100
    requests; the rest stays with the current version). Deploying the canary's version again
    without ``traffic`` promotes it; deploying the old version rolls back. On Kubernetes KServe
    rolls the InferenceService (``canaryTrafficPercent`` for a share; 422 where endpoints are
    queued by Kueue, whose RawDeployment mode has no share)."""
    mgr, client = request.app.state.jobs, kserve(request)
    if client is not None:
        _one_replica_on_kube(body.replicas)
        return await kube.deploy(ctx.storage, ctx.settings, as_person(caller), name, body, client)
    args = (ctx.storage, ctx.settings, as_person(caller), name, body, ctx.inventory, mgr.backend.name)
    out = await run_in_threadpool(ep.deploy, *args)
    mgr.wake()
    return out


@router.post("/{name}/scale", response_model=EndpointOut)
def scale_endpoint(name: str, body: EndpointScaleIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """The owner or an admin: run ``replicas`` replicas of every version with a share. New ones
    are jobs of the VC: past its quota they stay queued and the endpoint's ``reason`` says so
    (``v1: 2 of 3 replicas ready; queued: waiting: VC ...``); the route spreads each version's
    share over its ready replicas. Extra ones leave the route, drain and stop (queued or starting
    ones first). Scaling to the current count replaces replicas whose jobs ended."""
    mgr, client = request.app.state.jobs, kserve(request)
    if client is not None:
        _one_replica_on_kube(body.replicas)
    out = ep.scale(ctx.storage, ctx.settings, as_person(caller), name, body.replicas, ctx.inventory, mgr.backend.name)
    mgr.wake_threadsafe()  # a plain def runs in a worker thread
    return out


def _one_replica_on_kube(count: int | None) -> None:
    if count not in (None, 1):
        raise Refusal(
            422, "on Kubernetes an endpoint is one KServe InferenceService; replicas other than 1 are not offered"
        )


@router.get("/{name}", response_model=EndpointOut)
async def get_endpoint(name: str, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """One endpoint: ``queued`` (reason: the quota that holds it), ``starting``, ``ready`` (reason:
    a roll under way), ``failed``; its replicas, their jobs and traffic shares (on Kubernetes:
    the InferenceService's status)."""
    client = kserve(request)
    if client is not None:
        return await kube.show(ctx.storage, as_person(caller), name, client)
    return await run_in_threadpool(_endpoint, ctx, as_person(caller), name)


def _endpoint(ctx: Context, person: Person, name: str) -> dict:
    with ctx.db.session() as s:
        return ep.endpoint_dict(s, ep.visible(s, person, name))


@router.delete("/{name}", status_code=204)
async def delete_endpoint(name: str, caller: Caller, ctx: Ctx, request: Request) -> Response:
    """The owner or an admin: stop its replicas (their jobs are cancelled, their allocations
    released); on Kubernetes, delete its InferenceService."""
    client = kserve(request)
    if client is not None:
        await kube.delete(ctx.storage, ctx.settings, as_person(caller), name, client)
        return Response(status_code=204)
    jobs = await run_in_threadpool(ep.delete, ctx.storage, ctx.settings, as_person(caller), name)
    for job in jobs:
        await request.app.state.jobs.cancel(job)
    await run_in_threadpool(ep.remove_files, ctx.settings, name)
    return Response(status_code=204)


# Open Inference Protocol calls, passed through to a routed replica: a plain ASGI app (the hot
# path of serving; routes/endpoints_v2.py says who may call and every answer), kept out of the
# OpenAPI document. core/app.py also puts its V2FastPath in front of the router.
router.routes += [
    # every method: v2_app answers OPTIONS and 405 (with Allow) in the protocol's error shape itself
    Route(f"{router.prefix}/{{name}}/v2", v2_app, include_in_schema=False),
    Route(f"{router.prefix}/{{name}}/v2/{{rest:path}}", v2_app, include_in_schema=False),
]
