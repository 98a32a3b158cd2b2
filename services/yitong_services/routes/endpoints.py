"""Endpoints: deploy a model version (Open Inference Protocol, served by MLServer replicas that
queue like jobs), roll to another version or give it a canary share, list, show, delete;
``/endpoints/{name}/v2/...`` passes health, metadata and infer through to a routed replica."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy import select

from ..core.authz import Person, is_member
from ..core.context import Context
from ..core.errors import Refusal
from ..core.limits import load_json
from ..models import endpoints as ep
from ..models import v2check
from ..models.models import Endpoint, ModelVersion
from ..models.rollout import Router
from ..models.schemas import EndpointDeployIn, EndpointIn, EndpointOut
from ..vcs.models import VC
from .common import Caller, Ctx, as_person

router = APIRouter(prefix="/endpoints", tags=["endpoints"])
MAX_BODY = 64 << 20
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


@router.get("", response_model=list[EndpointOut])
def list_endpoints(caller: Caller, ctx: Ctx) -> list[dict]:
    """Endpoints of the caller's VCs."""
    person = as_person(caller)
    with ctx.db.session() as s:
        mine = {v.name for v in s.scalars(select(VC)) if is_member(person, v.groups)}
        return [ep.endpoint_dict(s, e) for e in s.scalars(select(Endpoint).order_by(Endpoint.name)) if e.vc in mine]


@router.post("", response_model=EndpointOut, status_code=201)
def create_endpoint(body: EndpointIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Members of the model's VC: serve a version (``vc/name@ref``) with the resources of
    ``profile``. Its replica is a job of the caller in the VC: ``state`` is ``queued`` (with the
    queue's reason, naming the quota and VC) while the VC's quota is full, then ``starting``, then
    ``ready`` once the server answers; 422 for a request the VC's quota can never hold."""
    mgr = request.app.state.jobs
    out = ep.create(ctx.storage, ctx.settings, as_person(caller), body, ctx.inventory, mgr.backend.name)
    mgr.wake_threadsafe()
    return out


@router.post("/{name}/deploy", response_model=EndpointOut)
def deploy_endpoint(name: str, body: EndpointDeployIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """The owner or an admin: roll the endpoint to another version of its model (``vc/name@ref``)
    without an unanswered request (the new replica starts, joins the route once ready, then the
    old ones drain and stop), or give it a canary share (``traffic: {"v2": 10}``: 10 of every 100
    requests; the rest stays with the current version). Deploying the canary's version again
    without ``traffic`` promotes it; deploying the old version rolls back."""
    mgr = request.app.state.jobs
    out = ep.deploy(ctx.storage, ctx.settings, as_person(caller), name, body, ctx.inventory, mgr.backend.name)
    mgr.wake_threadsafe()
    return out


@router.get("/{name}", response_model=EndpointOut)
def get_endpoint(name: str, caller: Caller, ctx: Ctx) -> dict:
    """One endpoint: ``queued`` (reason: the quota that holds it), ``starting``, ``ready`` (reason:
    a roll under way), ``failed``; its replicas, their jobs and traffic shares."""
    with ctx.db.session() as s:
        return ep.endpoint_dict(s, ep.visible(s, as_person(caller), name))


@router.delete("/{name}", status_code=204)
async def delete_endpoint(name: str, caller: Caller, ctx: Ctx, request: Request) -> Response:
    """The owner or an admin: stop its replicas (their jobs are cancelled, their allocations released)."""
    jobs = await run_in_threadpool(ep.delete, ctx.storage, ctx.settings, as_person(caller), name)
    for job in jobs:
        await request.app.state.jobs.cancel(job)
    await run_in_threadpool(ep.remove_files, ctx.settings, name)
    return Response(status_code=204)


@router.api_route("/{name}/v2/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
async def v2(name: str, rest: str, request: Request, caller: Caller, ctx: Ctx) -> Response:
    """Open Inference Protocol calls, passed through to a routed replica for members of its VC;
    the platform's own refusals here use the protocol's error shape, ``{"error": sentence}``."""
    try:
        return await _pass(name, rest, request, caller, ctx)
    except Refusal as refused:
        return JSONResponse({"error": refused.detail}, status_code=refused.status)


def _target(ctx: Context, person: Person, name: str) -> tuple[list[dict[str, Any]], int, dict]:
    with ctx.db.session() as s:
        e = ep.visible(s, person, name)
        v = s.get(ModelVersion, e.version_id)
        return list(e.replicas or []), e.port, (v.signature if v else {})


async def _pass(name: str, rest: str, request: Request, caller: Caller, ctx: Ctx) -> Response:
    reps, legacy_port, signature = await run_in_threadpool(_target, ctx, as_person(caller), name)
    size = int(request.headers.get("content-length") or 0)
    if size > MAX_BODY:
        raise Refusal(413, f"a request to endpoint {name} of {size} bytes is over the {MAX_BODY}-byte limit")
    body = await request.body()
    if len(body) > MAX_BODY:
        raise Refusal(413, f"a request to endpoint {name} is over the {MAX_BODY}-byte limit")
    if request.method == "POST" and rest.endswith("/infer") and signature.get("inputs"):
        try:
            doc = load_json(body.decode(), what="the request")
        except (ValueError, UnicodeDecodeError):
            doc = None  # not JSON (binary tensors): the server answers
        refused = v2check.refusal(doc, signature) if doc is not None else None
        if refused:
            raise Refusal(400, f"endpoint {name}: {refused}")
    headers = {
        k: v for k, v in request.headers.items() if k.lower() in ("content-type", "inference-header-content-length")
    }
    traffic = traffic_router(request)
    tried: set[int] = set()
    while True:
        replica = traffic.choose(name, reps, tried) if reps else None
        port = replica["port"] if replica else (legacy_port if not reps and not tried else 0)
        if not port:
            raise Refusal(503, f"endpoint {name} is not answering (queued, starting, or stopped): try again shortly")
        job = replica["job"] if replica else 0
        tried.add(job)
        traffic.enter(job)
        try:
            r = await client().request(
                request.method,
                f"http://127.0.0.1:{port}/v2/{rest}",
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
        keep = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "inference-header-content-length")}
        return Response(content=r.content, status_code=r.status_code, headers=keep)
