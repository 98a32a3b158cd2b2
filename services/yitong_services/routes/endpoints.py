"""Endpoints: deploy a model version (Open Inference Protocol, served by MLServer replicas that
queue like jobs), roll to another version or give it a canary share, list, show, delete;
``/endpoints/{name}/v2/...`` passes health, metadata and infer through to a routed replica."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy import select

from ..core.auth import identify, request_token
from ..core.authz import Person, is_member
from ..core.context import Context
from ..core.errors import Refusal
from ..core.limits import DocumentError, load_json
from ..models import endpoint_keys as keys
from ..models import endpoints as ep
from ..models import endpoints_kube as kube
from ..models import v2check
from ..models.kserve_client import KServeEndpoints
from ..models.models import Endpoint, ModelVersion
from ..models.rollout import Router
from ..models.schemas import EndpointDeployIn, EndpointIn, EndpointOut, EndpointScaleIn
from ..vcs.models import VC
from .common import Caller, Ctx, as_person

router = APIRouter(prefix="/endpoints", tags=["endpoints"])
MAX_BODY = 64 << 20
INLINE_CHECK = 64 << 10  # bytes of an infer request parsed and checked on the event loop
_client: httpx.AsyncClient | None = None


def client() -> httpx.AsyncClient:
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=256, max_keepalive_connections=64))
    return _client


def traffic_router(request: Request) -> Router:
    found = getattr(request.app.state, "endpoint_router", None)
    if found is None:
        found = request.app.state.endpoint_router = Router()
    return found


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


@router.api_route("/{name}/v2", methods=["GET"], include_in_schema=False)
@router.api_route("/{name}/v2/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
async def v2(name: str, request: Request, ctx: Ctx, rest: str = "") -> Response:
    """Open Inference Protocol calls, passed through to a routed replica for members of its VC (a
    hub token) and for holders of one of its keys (``models/endpoint_keys.py``). Every refusal and
    every error of the model server is answered in the protocol's error shape, ``{"error":
    sentence}``: the caller's own (401, 404 as for an unknown endpoint), a request that breaks the
    protocol or the version's signature (400), no replica answering (503)."""
    try:
        who = await _caller(request, ctx)
        return await _pass(name, rest, request, who, ctx)
    except Refusal as refused:
        return JSONResponse({"error": refused.detail}, status_code=refused.status)
    except HTTPException as refused:
        return JSONResponse({"error": str(refused.detail)}, status_code=refused.status_code, headers=refused.headers)


async def _caller(request: Request, ctx: Context) -> Person | str:
    """A person (from the hub) or an endpoint key (checked against its endpoint by ``_target``)."""
    token = request_token(request, ctx)
    if token and keys.is_key(token):
        return token
    identity = await identify(request, ctx)
    if identity is None:
        raise HTTPException(
            401,
            "authentication required: send 'Authorization: Bearer <JupyterHub token or endpoint key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return as_person(identity)


def _target(ctx: Context, who: Person | str, name: str) -> tuple[list[dict[str, Any]], str, dict]:
    """Replicas, the one address of an endpoint without replicas (KServe's predictor, or a
    process endpoint made before replicas), the version's signature."""
    with ctx.db.session() as s:
        if isinstance(who, str):
            opens = keys.endpoint_of(s, who)
            if opens is None:
                raise Refusal(401, "this endpoint key is not valid (revoked, or never issued)")
            e = s.scalar(select(Endpoint).where(Endpoint.name == name))
            if e is None or e.id != opens:  # another endpoint's key: as if there were no endpoint
                raise Refusal(404, f"there is no endpoint {name}")
        else:
            e = ep.visible(s, who, name)
        v = s.get(ModelVersion, e.version_id)
        single = (e.engine or {}).get("url") or (f"http://127.0.0.1:{e.port}" if e.port else "")
        return list(e.replicas or []), single, (v.signature if v else {})


def _infer_refusal(request: Request, body: bytes, signature: dict) -> str | None:
    """Why an infer request's JSON (its header, with the binary tensor extension) is refused."""
    header = request.headers.get("inference-header-content-length")
    if header is not None:
        if not header.isdigit() or int(header) > len(body):
            return f"Inference-Header-Content-Length {header[:20]!r} is not a length within the body"
        body = body[: int(header)]
    try:
        doc = load_json(body.decode(), what="the request")
    except DocumentError as refused:
        return str(refused)
    except (ValueError, UnicodeDecodeError) as refused:
        return f"the request is not JSON: {refused}"
    return v2check.protocol_refusal(doc) or v2check.refusal(doc, signature)


async def _pass(name: str, rest: str, request: Request, who: Person | str, ctx: Context) -> Response:
    if isinstance(who, str):  # a key: checked every time, so a revoked one fails at once
        reps, single, signature = await run_in_threadpool(_target, ctx, who, name)
    else:  # a person: kept until this process commits a write (a roll, a membership change)
        key = ("endpoint", name, who.name, who.admin, frozenset(who.groups))
        reps, single, signature = await ctx.db.reads.read(key, _target, ctx, who, name)
    size = int(request.headers.get("content-length") or 0)
    if size > MAX_BODY:
        raise Refusal(413, f"a request to endpoint {name} of {size} bytes is over the {MAX_BODY}-byte limit")
    body = await request.body()
    if len(body) > MAX_BODY:
        raise Refusal(413, f"a request to endpoint {name} is over the {MAX_BODY}-byte limit")
    if request.method == "POST" and rest.endswith("/infer"):
        # small requests are checked at once; large ones off the event loop
        if len(body) <= INLINE_CHECK:
            refused = _infer_refusal(request, body, signature)
        else:
            refused = await run_in_threadpool(_infer_refusal, request, body, signature)
        if refused:
            raise Refusal(400, f"endpoint {name}: {refused}")
    headers = {
        k: v for k, v in request.headers.items() if k.lower() in ("content-type", "inference-header-content-length")
    }
    traffic = traffic_router(request)
    tried: set[int] = set()
    while True:
        replica = traffic.choose(name, reps, tried) if reps else None
        base = f"http://127.0.0.1:{replica['port']}" if replica else (single if not reps and not tried else "")
        if not base:
            raise Refusal(503, f"endpoint {name} is not answering (queued, starting, or stopped): try again shortly")
        job = replica["job"] if replica else 0
        tried.add(job)
        traffic.enter(job)
        try:
            r = await client().request(
                request.method,
                f"{base.rstrip('/')}/v2" + (f"/{rest}" if rest else ""),
                content=body,
                headers=headers,
                params=request.query_params,
            )
        except httpx.ConnectError:
            continue  # that replica stopped meanwhile: the next routed one answers
        except httpx.HTTPError:
            raise Refusal(503, f"endpoint {name} is not answering (starting, or stopped): try again shortly") from None
        finally:
            traffic.leave(job)
        if r.status_code >= 400:
            sentence = v2check.error_sentence(r.status_code, r.content)
            if sentence:
                return JSONResponse({"error": f"endpoint {name}: {sentence}"}, status_code=r.status_code)
        if r.status_code == 200 and not r.content and request.method == "GET":
            filled = v2check.health_body(rest)
            if filled is not None:
                return JSONResponse(filled)
        keep = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "inference-header-content-length")}
        return Response(content=r.content, status_code=r.status_code, headers=keep)
