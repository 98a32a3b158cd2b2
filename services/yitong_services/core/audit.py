"""The audit log: admin actions and actions on behalf of others (who, what, when, from where).

``record`` adds an entry in the caller's transaction, so an action and its entry commit
together or not at all. This service's own token (the hub's spawner acting for the person who
spawns) is the platform itself and is not audited; people with admin rights are.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from sqlalchemy.orm import Session

from .authz import Identity
from .models import AuditEntry


def source_of(request: Request) -> str:
    """Where a request came from: the proxy's ``X-Forwarded-For`` chain, else the peer address."""
    forwarded = request.headers.get("x-forwarded-for", "").strip()
    peer = request.client.host if request.client else "unknown"
    return (f"{forwarded} via {peer}" if forwarded else peer)[:255]


def audited(caller: Identity, owner: str | None = None) -> bool:
    """Admins' actions are audited (all of them on others' objects and on the platform)."""
    if caller.trusted:
        return False
    return caller.admin and (owner is None or owner != caller.name)


def record(
    session: Session,
    caller: Identity,
    request: Request,
    action: str,
    target: str,
    *,
    owner: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Add an entry when ``caller``'s action on ``target`` (owned by ``owner``) is audited."""
    if not audited(caller, owner):
        return
    session.add(
        AuditEntry(
            actor=caller.name,
            actor_kind=caller.kind,
            action=action,
            target=target[:512],
            on_behalf_of=owner if owner and owner != caller.name else None,
            source=source_of(request),
            detail=detail or {},
        )
    )


def entry_dict(e: AuditEntry) -> dict[str, Any]:
    return {
        "id": e.id,
        "at": e.at,
        "actor": e.actor,
        "actor_kind": e.actor_kind,
        "action": e.action,
        "target": e.target,
        "on_behalf_of": e.on_behalf_of,
        "source": e.source,
        "detail": e.detail,
    }
