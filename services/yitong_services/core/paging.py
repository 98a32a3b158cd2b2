"""Paged lists and conditional GETs, the way JupyterHub's REST API pages.

``?offset=&limit=`` on every list route. Without ``Accept: application/jupyterhub-pagination+json``
the answer stays the plain JSON list older clients expect (at most :data:`MAX_LIMIT` items; the
total is in the ``X-Total-Count`` header); with it, the hub's envelope::

    {"items": [...], "_pagination": {"offset": 0, "limit": 200, "total": 10000,
                                     "next": {"offset": 200, "limit": 200} | null}}

Every answer made by :func:`json_response` carries a strong ``ETag`` (a hash of its bytes); a GET
whose ``If-None-Match`` names it gets ``304 Not Modified`` with no body.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date
from pathlib import PurePath
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from fastapi.responses import Response

from .limits import MAX_ID

MAX_LIMIT = 1000
PAGINATION_MEDIA = "application/jupyterhub-pagination+json"


@dataclass(frozen=True)
class Page:
    offset: int = 0
    limit: int = MAX_LIMIT


async def page_params(
    offset: int = Query(0, ge=0, le=MAX_ID, description="items to skip"),
    limit: int = Query(MAX_LIMIT, ge=1, le=MAX_LIMIT, description=f"most items to return (1 to {MAX_LIMIT})"),
) -> Page:
    # async: no thread-pool hop for a dependency that only builds a value
    return Page(offset=offset, limit=limit)


Paging = Annotated[Page, Depends(page_params)]


def envelope(items: list[Any], total: int, page: Page) -> dict[str, Any]:
    """The hub's pagination envelope (pure)."""
    end = page.offset + len(items)
    nxt = {"offset": end, "limit": page.limit} if end < total and items else None
    return {"items": items, "_pagination": {"offset": page.offset, "limit": page.limit, "total": total, "next": nxt}}


def wants_envelope(request: Request) -> bool:
    return PAGINATION_MEDIA in request.headers.get("accept", "")


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def not_modified(request: Request, etag: str) -> bool:
    """True when the request's ``If-None-Match`` names ``etag`` (or ``*``)."""
    header = request.headers.get("if-none-match")
    if not header or request.method not in ("GET", "HEAD"):
        return False
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    return etag in tags or "*" in tags


def _plain(value: Any) -> Any:
    """What ``json.dumps`` cannot write, as FastAPI's encoder writes it (ISO dates, model dumps)."""
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, PurePath):
        return str(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def encode(content: Any) -> bytes:
    """JSON bytes as FastAPI's ``JSONResponse`` writes them, without its slower generic encoder."""
    return json.dumps(content, default=_plain, separators=(",", ":"), ensure_ascii=False).encode()


def encoded(content: Any) -> tuple[bytes, str]:
    """``(JSON bytes, their ETag)``: what :func:`bytes_response` sends (pure; a read cache keeps it)."""
    body = encode(content)
    return body, etag_of(body)


def bytes_response(request: Request, body: bytes, etag: str, headers: dict[str, str] | None = None) -> Response:
    """JSON ``body`` with its ETag; 304 when the client already holds these bytes."""
    out_headers = {"ETag": etag, "Cache-Control": "private, no-cache", **(headers or {})}
    if not_modified(request, etag):
        return Response(status_code=304, headers=out_headers)
    return Response(body, media_type="application/json", headers=out_headers)


def json_response(request: Request, content: Any, headers: dict[str, str] | None = None) -> Response:
    """``content`` as JSON with an ETag; 304 when the client already holds these bytes."""
    return bytes_response(request, *encoded(content), headers)


def page_content(items: list[Any], total: int, page: Page, as_envelope: bool) -> tuple[Any, dict[str, str]]:
    """One page as the client asked for it: ``(the envelope, {})`` or ``(the plain list, X-Total-Count)``."""
    if as_envelope:
        return envelope(items, total, page), {}
    return items, {"X-Total-Count": str(total)}


def paged_response(request: Request, items: list[Any], total: int, page: Page) -> Response:
    """One page: the envelope when the client asked for it, else the plain list."""
    content, headers = page_content(items, total, page, wants_envelope(request))
    return json_response(request, content, headers)
