"""Endpoints: deploy a model version (Open Inference Protocol, served by MLServer), list, show,
delete; ``/endpoints/{name}/v2/...`` passes health, metadata and infer through to it."""

from __future__ import annotations

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
from ..models import v2check
from ..models.models import Endpoint, ModelVersion
from ..models.schemas import EndpointIn, EndpointOut
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


@router.api_route("/{name}/v2", methods=["GET"], include_in_schema=False)
@router.api_route("/{name}/v2/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
async def v2(name: str, request: Request, ctx: Ctx, rest: str = "") -> Response:
    """Open Inference Protocol calls, passed through to the endpoint's server for members of its
    VC (a hub token) and for holders of one of its keys (``models/endpoint_keys.py``). Every
    refusal and every error of the model server is answered in the protocol's error shape,
    ``{"error": sentence}``: the caller's own (401, 404 as for an unknown endpoint), a request
    that breaks the protocol or the version's signature (400), a server that is not up (503)."""
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


def _target(ctx: Context, who: Person | str, name: str) -> tuple[int, dict]:
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
        return e.port, (v.signature if v else {})


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
    port, signature = await run_in_threadpool(_target, ctx, who, name)
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
    try:
        r = await client().request(
            request.method,
            f"http://127.0.0.1:{port}/v2" + (f"/{rest}" if rest else ""),
            content=body,
            headers=headers,
            params=request.query_params,
        )
    except httpx.HTTPError:
        raise Refusal(503, f"endpoint {name} is not answering (starting, or stopped): try again shortly") from None
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
