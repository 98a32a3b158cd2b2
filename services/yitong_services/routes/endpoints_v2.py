"""``/endpoints/{name}/v2/...``: Open Inference Protocol calls passed through to a routed replica,
for members of the endpoint's VC (a hub token, or the HubOAuth cookie on GET) and for holders of
one of its keys (``models/endpoint_keys.py``). Every refusal and every error of the model server
is answered in the protocol's error shape, ``{"error": sentence}``: the caller's own (401, 404 as
for an unknown endpoint), a body over the limit (413), a request that breaks the protocol or the
version's signature (400; a BYTES input where the signature takes numbers, or numbers where it
takes BYTES, too), a method the path does not take (405 with ``Allow``; OPTIONS answers 204
with ``Allow`` and never reaches the model server), no replica answering (503). An infer
request in the binary tensor extension (tritonclient's and KServe's ``binary_data=True``) is
rewritten as the JSON request it means (models/v2binary.py; MLServer reads no binary) and sent
as ``application/json`` whatever type the caller gave (``curl -d`` sends a form's). A model's
metadata whose ``inputs``/``outputs`` the model server left empty gets the version's registered
signature.

The hot path of serving, so it is a plain ASGI app (no FastAPI request parsing, dependencies or
response classes per call): ``v2_app`` is registered on the endpoints router (routes/endpoints.py,
kept out of the OpenAPI document), and ``V2FastPath``, a middleware in front of the router, hands
it the requests whose path matches without walking the route table. Replicas on this machine are
called over ``core/loopback_http.py``'s keep-alive pool, on the unix socket in the replica's own
folder, and only when the socket's listener runs as the replica's account (``SO_PEERCRED``; a
socket of another account's process is never sent a byte, and the caller is told so); a KServe
predictor's URL over httpx.
"""

from __future__ import annotations

import json
import logging
import re
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from fastapi import HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.auth import identify, request_token
from ..core.authz import Person
from ..core.context import Context
from ..core.errors import HUB_RETRY_AFTER, Refusal
from ..core.hub import HubError, HubUnavailable
from ..core.limits import DocumentError, load_json
from ..core.loopback_http import LoopbackError, LoopbackPool, Refused, Reply, WrongPeer
from ..models import endpoint_keys as keys
from ..models import endpoints as ep
from ..models import v2binary, v2check
from ..models.models import Endpoint, ModelVersion
from ..models.rollout import Router
from .common import as_person

log = logging.getLogger(__name__)
MAX_BODY = 64 << 20
INLINE_CHECK = 64 << 10  # bytes of an infer request parsed and checked on the event loop
PASSED = ("content-type", "inference-header-content-length")  # headers passed either way
LOOPBACK = ("127.0.0.1", "localhost")
# below <api>/endpoints/: the name, then /v2 and the rest (as the router's {name} and {rest:path})
_PATH = re.compile(r"([^/]+)/v2(?:/(.*))?\Z", re.DOTALL)


class V2FastPath:
    """ASGI middleware: requests for ``<api>/endpoints/{name}/v2[/...]``, whatever their method,
    go straight to :func:`v2_app` (which answers OPTIONS and 405s itself, with ``Allow``);
    everything else to ``app``."""

    def __init__(self, app: ASGIApp, api_prefix: str) -> None:
        self.app = app
        self.prefix = api_prefix.rstrip("/") + "/endpoints/"
        # the route's label in the request metrics (core/metrics.py reads scope["route"].path)
        self.routes = {
            False: SimpleNamespace(path=self.prefix + "{name}/v2"),
            True: SimpleNamespace(path=self.prefix + "{name}/v2/{rest:path}"),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if path.startswith(self.prefix):
            match = _PATH.match(path, len(self.prefix))
            if match:
                name, rest = match.groups()
                scope["path_params"] = {"name": name, "rest": rest or ""}
                scope["route"] = self.routes[rest is not None]
                return await v2_app(scope, receive, send)
        await self.app(scope, receive, send)


class V2App:
    """The pass-through, as an ASGI app (``scope["path_params"]``: ``name``, ``rest``); an
    instance, not a function, so that Starlette's ``Route`` calls it as ASGI."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _serve(scope, receive, send)


v2_app = V2App()


async def _serve(scope: Scope, receive: Receive, send: Send) -> None:
    state = scope["app"].state
    ctx: Context = state.yitong
    name, rest = scope["path_params"]["name"], scope["path_params"].get("rest", "")
    request = Request(scope, receive)
    extra: dict[str, str] = {}
    reply: Reply | None
    allow = allowed(rest)
    if request.method == "OPTIONS":  # what the path takes; no body, nothing of the endpoint's
        reply, extra = Reply(204, {}, b""), {"allow": ", ".join([*allow, "OPTIONS"])}
    elif request.method not in allow:
        sentence = f"{request.method} is not a method of /v2/{rest}: use {' or '.join(allow)}"
        reply, extra = _error(405, sentence), {"allow": ", ".join([*allow, "OPTIONS"])}
    else:
        try:
            who = await _caller(request, ctx)
            reply = await _pass(state, name, rest, request, who, ctx)
        except Refusal as refused:
            reply = _error(refused.status, refused.detail)
        except HTTPException as refused:
            reply = _error(refused.status_code, str(refused.detail))
            extra = dict(refused.headers or {})
        except HubError as down:  # the hub could not say who the caller is
            log.error("%s", down)
            if isinstance(down, HubUnavailable):  # not the caller's token: ask again shortly
                reply, extra = _error(503, str(down)), {"retry-after": str(HUB_RETRY_AFTER)}
            else:
                reply = _error(502, str(down))
    if reply is None:
        return  # the caller went away while sending its body
    headers = [(b"content-length", str(len(reply.body)).encode())]
    headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (reply.headers | extra).items()]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


def _json(status: int, doc: Any) -> Reply:
    body = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    return Reply(status, {"content-type": "application/json"}, body)


def _error(status: int, sentence: str) -> Reply:
    return _json(status, {"error": sentence})


def allowed(rest: str) -> tuple[str, ...]:
    """The methods the protocol gives the path after ``/v2/``: POST for infer and MLServer's
    repository calls, GET for health and metadata; a path it does not name is passed either way."""
    if rest.endswith("/infer") or rest.startswith("repository/"):
        return ("POST",)
    if rest == "" or rest.startswith("health/") or v2check.metadata_path(rest) or rest.endswith("/ready"):
        return ("GET",)
    return ("GET", "POST")


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


def as_json_request(body: bytes, header: str | None) -> tuple[bytes, str | None]:
    """``(JSON body, None)``: a binary-extension request (``Inference-Header-Content-Length``)
    rewritten as the JSON request it means (models/v2binary.py); ``(body, sentence)`` when it
    cannot be."""
    if header is None:
        return body, None
    try:
        return v2binary.dumps(v2binary.to_json(body, header)), None
    except v2binary.BinaryRefused as refused:
        return body, str(refused)
    except ValueError:  # NaN or infinity: no JSON number holds them
        return body, "the binary data holds NaN or infinity, which JSON (and so the model server) cannot carry"


def infer_refusal(body: bytes, header: str | None, signature: dict) -> str | None:
    """Why an infer request's JSON (with the binary tensor extension's
    ``Inference-Header-Content-Length``: its JSON header) is refused."""
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


async def _body(request: Request, name: str) -> bytes | None:
    """The request's body within ``MAX_BODY``; None when the caller went away."""
    size = request.headers.get("content-length") or "0"
    if size.isdigit() and int(size) > MAX_BODY:
        raise Refusal(413, f"a request to endpoint {name} of {size} bytes is over the {MAX_BODY}-byte limit")
    parts: list[bytes] = []
    seen = 0
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return None
        part = message.get("body", b"")
        seen += len(part)
        if seen > MAX_BODY:
            raise Refusal(413, f"a request to endpoint {name} is over the {MAX_BODY}-byte limit")
        parts.append(part)
        if not message.get("more_body"):
            return b"".join(parts)


def traffic_router(state: Any) -> Router:
    found = getattr(state, "endpoint_router", None)
    if found is None:
        found = state.endpoint_router = Router()
    return found


def loopback(state: Any) -> LoopbackPool:
    found = getattr(state, "loopback", None)
    if found is None:
        found = state.loopback = LoopbackPool(timeout=60, max_idle=64)
    return found


_client: httpx.AsyncClient | None = None


def client() -> httpx.AsyncClient:
    """For a predictor elsewhere (KServe's URL): not this machine."""
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=256, max_keepalive_connections=64))
    return _client


async def _pass(state: Any, name: str, rest: str, request: Request, who: Person | str, ctx: Context) -> Reply | None:
    if isinstance(who, str):  # a key: checked every time, so a revoked one fails at once
        reps, single, signature = await run_in_threadpool(_target, ctx, who, name)
    else:  # a person: kept until this process commits a write (a roll, a membership change)
        key = ("endpoint", name, who.name, who.admin, frozenset(who.groups))
        reps, single, signature = await ctx.db.reads.read(key, _target, ctx, who, name)
    received = await _body(request, name)
    if received is None:
        return None
    body: bytes = received
    method = request.method
    headers = {k: v for k, v in request.headers.items() if k in PASSED}
    if method == "POST" and rest.endswith("/infer"):
        # small requests are checked at once; large ones off the event loop
        header = headers.pop("inference-header-content-length", None)
        if len(body) <= INLINE_CHECK:
            body, refused = as_json_request(body, header)
            refused = refused or infer_refusal(body, None, signature)
        else:
            body, refused = await run_in_threadpool(as_json_request, body, header)
            refused = refused or await run_in_threadpool(infer_refusal, body, None, signature)
        if refused:
            raise Refusal(400, f"endpoint {name}: {refused}")
        # it parsed as JSON: say so, whatever the caller sent (curl -d sends a form's type)
        headers["content-type"] = "application/json"
    query = request.scope.get("query_string", b"").decode("latin-1")
    target = "/v2" + (f"/{quote(rest, safe='/:@!$&()*+,;=-._~')}" if rest else "") + (f"?{query}" if query else "")
    traffic = traffic_router(state)
    tried: set[int] = set()
    wrong = ""  # why a replica was not called (its socket is another account's)
    while True:
        replica = traffic.choose(name, reps, tried) if reps else None
        base = "" if replica else (single if not reps and not tried else "")
        if replica is None and not base:
            if wrong:
                raise Refusal(503, f"endpoint {name} is not answering: {wrong}")
            raise Refusal(503, f"endpoint {name} is not answering (queued, starting, or stopped): try again shortly")
        job = replica["job"] if replica else 0
        tried.add(job)
        which = f"replica v{replica['number']} (job {job})" if replica else ""
        if replica is not None and not replica.get("socket"):
            wrong = f"{which} listens on a TCP port (an earlier release), which is not trusted; deploy again"
            continue
        traffic.enter(job)
        try:
            if replica is not None:
                r = await loopback(state).request(
                    replica["socket"], 0, method, target, body, headers, peer_uid=int(replica["uid"])
                )
            else:
                r = await _send(state, base, method, target, body, headers)
        except WrongPeer as e:
            wrong = f"{which} was not called: {e}"
            log.error("endpoint %s: %s", name, wrong)
            continue
        except Refused:
            continue  # that replica stopped meanwhile: the next routed one answers
        except (LoopbackError, ValueError):
            raise Refusal(503, f"endpoint {name} is not answering (starting, or stopped): try again shortly") from None
        finally:
            traffic.leave(job)
        if r.status >= 400:
            sentence = v2check.error_sentence(r.status, r.body)
            if sentence:
                return _error(r.status, f"endpoint {name}: {sentence}")
        if r.status == 200 and not r.body and method == "GET":
            filled = v2check.health_body(rest)
            if filled is not None:
                return _json(200, filled)
        if r.status == 200 and method == "GET" and v2check.metadata_path(rest):
            described = v2check.with_signature(r.body, signature)
            if described is not None:
                return Reply(200, {"content-type": "application/json"}, described)
        return Reply(r.status, {k: v for k, v in r.headers.items() if k in PASSED}, r.body)


async def _send(state: Any, base: str, method: str, target: str, body: bytes, headers: dict[str, str]) -> Reply:
    """``method base+target``: over the loopback pool on this machine, else over httpx."""
    url = urlsplit(base)
    if url.scheme == "http" and url.hostname in LOOPBACK and url.port:
        return await loopback(state).request(
            url.hostname, url.port, method, url.path.rstrip("/") + target, body, headers
        )
    try:
        r = await client().request(method, base.rstrip("/") + target, content=body, headers=headers)
    except httpx.ConnectError:
        raise Refused(f"nothing answers at {base}") from None
    except httpx.HTTPError as e:
        raise LoopbackError(str(e)) from None
    return Reply(r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.content)
