"""Endpoints: deploy a model version (Open Inference Protocol, served by MLServer), list, show,
delete; ``/endpoints/{name}/v2/...`` passes health, metadata and infer through to it."""

from __future__ import annotations

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
from ..models.schemas import EndpointIn, EndpointOut
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


@router.get("", response_model=list[EndpointOut])
def list_endpoints(caller: Caller, ctx: Ctx) -> list[dict]:
    """Endpoints of the caller's VCs."""
    person = as_person(caller)
    with ctx.db.session() as s:
        mine = {v.name for v in s.scalars(select(VC)) if is_member(person, v.groups)}
        return [ep.endpoint_dict(s, e) for e in s.scalars(select(Endpoint).order_by(Endpoint.name)) if e.vc in mine]


@router.post("", response_model=EndpointOut, status_code=201)
def create_endpoint(body: EndpointIn, caller: Caller, ctx: Ctx) -> dict:
    """Members of the model's VC: serve a version (``vc/name@ref``); it holds an allocation of
    ``profile`` in the VC (409 with the quota sentence when full). ``state`` is ``starting``
    until ``GET /endpoints/{name}`` finds it ready."""
    return ep.create(ctx.storage, ctx.settings, as_person(caller), body, ctx.inventory)


async def _ready(port: int) -> bool:
    try:
        r = await client().get(f"http://127.0.0.1:{port}/v2/health/ready", timeout=2)
    except httpx.HTTPError:
        return False
    return r.status_code == 200


def _read(ctx: Context, person: Person, name: str) -> tuple[dict, int]:
    with ctx.db.session() as s:
        e = ep.visible(s, person, name)
        return ep.endpoint_dict(s, e), e.port


def _write_state(ctx: Context, person: Person, name: str, state: str) -> None:
    with ctx.db.writing() as s:
        ep.visible(s, person, name).state = state


@router.get("/{name}", response_model=EndpointOut)
async def get_endpoint(name: str, caller: Caller, ctx: Ctx) -> dict:
    """One endpoint; its state is probed (``starting`` -> ``ready``)."""
    person = as_person(caller)
    out, port = await run_in_threadpool(_read, ctx, person, name)
    state = "ready" if await _ready(port) else ("starting" if out["state"] == "starting" else "unavailable")
    if state != out["state"]:
        await run_in_threadpool(_write_state, ctx, person, name, state)
    return out | {"state": state}


@router.delete("/{name}", status_code=204)
def delete_endpoint(name: str, caller: Caller, ctx: Ctx) -> Response:
    """The owner or an admin: stop the server and release its allocation."""
    ep.delete(ctx.storage, ctx.settings, as_person(caller), name)
    return Response(status_code=204)


@router.api_route("/{name}/v2/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
async def v2(name: str, rest: str, request: Request, caller: Caller, ctx: Ctx) -> Response:
    """Open Inference Protocol calls, passed through to the endpoint's server for members of its VC;
    the platform's own refusals here use the protocol's error shape, ``{"error": sentence}``."""
    try:
        return await _pass(name, rest, request, caller, ctx)
    except Refusal as refused:
        return JSONResponse({"error": refused.detail}, status_code=refused.status)


def _target(ctx: Context, person: Person, name: str) -> tuple[int, dict]:
    with ctx.db.session() as s:
        e = ep.visible(s, person, name)
        v = s.get(ModelVersion, e.version_id)
        return e.port, (v.signature if v else {})


async def _pass(name: str, rest: str, request: Request, caller: Caller, ctx: Ctx) -> Response:
    port, signature = await run_in_threadpool(_target, ctx, as_person(caller), name)
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
    try:
        r = await client().request(
            request.method,
            f"http://127.0.0.1:{port}/v2/{rest}",
            content=body,
            headers=headers,
            params=request.query_params,
        )
    except httpx.HTTPError:
        raise Refusal(503, f"endpoint {name} is not answering (starting, or stopped): try again shortly") from None
    keep = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "inference-header-content-length")}
    return Response(content=r.content, status_code=r.status_code, headers=keep)
