"""Per-endpoint keys for outside callers: admins issue (shown once), list and revoke them; each
is audited. The keys themselves are checked by ``endpoints.v2`` (``models/endpoint_keys.py``)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..core import audit
from ..models import endpoint_keys as keys
from ..models import endpoints as ep
from ..models.schemas import EndpointKeyIn, EndpointKeyNew, EndpointKeyOut
from .common import Caller, Ctx, Id, as_person, require_admin

router = APIRouter(prefix="/endpoints", tags=["endpoints"])


@router.get("/{name}/keys", response_model=list[EndpointKeyOut])
def list_keys(name: str, caller: Caller, ctx: Ctx) -> list[dict]:
    """Admin: the endpoint's keys, revoked ones included (never the keys themselves)."""
    require_admin(caller, "list endpoint keys")
    with ctx.db.session() as s:
        return keys.listing(s, ep.visible(s, as_person(caller), name))


@router.post("/{name}/keys", response_model=EndpointKeyNew, status_code=201)
def create_key(name: str, body: EndpointKeyIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: a new key for callers outside the VC, for this endpoint's ``/v2/...`` routes only
    (``Authorization: Bearer <key>``). The answer holds the key; only its hash is kept."""
    require_admin(caller, "issue endpoint keys")
    with ctx.db.writing() as s:
        out = keys.issue(s, ep.visible(s, as_person(caller), name), body.note, caller.name)
        detail = {"id": out["id"], "prefix": out["prefix"], "note": body.note}
        audit.record(s, caller, request, "endpoint.key.create", f"endpoint {name}", detail=detail)
        return out


@router.delete("/{name}/keys/{key_id}", status_code=204)
def revoke_key(name: str, key_id: Id, caller: Caller, ctx: Ctx, request: Request) -> Response:
    """Admin: revoke a key; requests with it are refused from now on (it stays listed)."""
    require_admin(caller, "revoke endpoint keys")
    with ctx.db.writing() as s:
        out = keys.revoke(s, ep.visible(s, as_person(caller), name), key_id)
        detail = {"id": key_id, "prefix": out["prefix"]}
        audit.record(s, caller, request, "endpoint.key.revoke", f"endpoint {name}", detail=detail)
    return Response(status_code=204)
