"""Per-endpoint keys: what an admin issues so that callers outside the endpoint's VC (another
team's service, a partner) may call its Open Inference Protocol routes, and nothing else.

A key is ``yte_`` and 43 URL-safe characters (256 random bits); only its SHA-256 is stored, so
it is shown once, when it is made. It answers only for its endpoint's ``/v2/...`` routes: on
another endpoint it gets the 404 of an unknown endpoint, on every other route the 401 of an
unknown token (it is never sent to the hub). Revoking it marks the row; the next request with it is refused (there is no
cache). Deleting the endpoint deletes its keys, so a later endpoint of the same name does not
inherit them.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ..core.auth import ENDPOINT_KEY_PREFIX
from ..core.errors import Refusal
from ..core.models import utcnow
from .models import Endpoint, EndpointKey

PREFIX = ENDPOINT_KEY_PREFIX
SHOWN = 12  # characters of a key kept to tell keys apart (the prefix and 8 more)
MAX_KEYS = 64  # live keys per endpoint


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def is_key(token: str) -> bool:
    """Whether a bearer token is shaped as an endpoint key (hub tokens never start so)."""
    return token.startswith(PREFIX)


def key_dict(k: EndpointKey, endpoint: str) -> dict[str, Any]:
    return {
        "id": k.id,
        "endpoint": endpoint,
        "prefix": k.prefix,
        "note": k.note,
        "created_by": k.created_by,
        "created": k.created,
        "revoked": k.revoked,
    }


def issue(session: Session, e: Endpoint, note: str, by: str) -> dict[str, Any]:
    """A new key for ``e``: its row as ``key_dict`` plus ``key``, the only time it is seen."""
    live = session.scalars(
        select(EndpointKey.id).where(EndpointKey.endpoint_id == e.id, EndpointKey.revoked.is_(None))
    ).all()
    if len(live) >= MAX_KEYS:
        raise Refusal(409, f"endpoint {e.name} has {MAX_KEYS} keys in use; revoke one first")
    key = PREFIX + secrets.token_urlsafe(32)
    row = EndpointKey(endpoint_id=e.id, digest=digest(key), prefix=key[:SHOWN], note=note, created_by=by)
    session.add(row)
    session.flush()
    return key_dict(row, e.name) | {"key": key}


def listing(session: Session, e: Endpoint) -> list[dict[str, Any]]:
    rows = session.scalars(select(EndpointKey).where(EndpointKey.endpoint_id == e.id).order_by(EndpointKey.id))
    return [key_dict(k, e.name) for k in rows]


def revoke(session: Session, e: Endpoint, key_id: int) -> dict[str, Any]:
    """Mark the key revoked (again: no change); 404 when ``e`` has no such key."""
    k = session.get(EndpointKey, key_id)
    if k is None or k.endpoint_id != e.id:
        raise Refusal(404, f"endpoint {e.name} has no key {key_id}")
    if k.revoked is None:
        k.revoked = utcnow()
    return key_dict(k, e.name)


def endpoint_of(session: Session, key: str) -> int | None:
    """The id of the endpoint a live key opens (None: no such key, or revoked)."""
    k = session.scalar(select(EndpointKey).where(EndpointKey.digest == digest(key)))
    if k is None or k.revoked is not None:
        return None
    return k.endpoint_id


def drop_all(session: Session, endpoint_id: int) -> None:
    session.execute(delete(EndpointKey).where(EndpointKey.endpoint_id == endpoint_id))
