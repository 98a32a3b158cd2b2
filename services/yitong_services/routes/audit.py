"""The audit log, for admins: newest first, paged like the hub's own lists."""

from __future__ import annotations

from fastapi import APIRouter, Query
from sqlalchemy import func, select

from ..core.audit import entry_dict
from ..core.models import AuditEntry
from .common import Caller, Ctx, require_admin

router = APIRouter(prefix="/audit", tags=["audit"])


@router.get("")
def list_audit(
    caller: Caller,
    ctx: Ctx,
    actor: str | None = Query(None, max_length=255),
    action: str | None = Query(None, max_length=64),
    offset: int = Query(0, ge=0, le=2**31),
    limit: int = Query(100, ge=1, le=1000),
) -> dict:
    """Admin: who did what, when, from where (``?actor=``, ``?action=``; ``offset``/``limit``)."""
    require_admin(caller, "read the audit log")

    query = select(AuditEntry)
    if actor is not None:
        query = query.where(AuditEntry.actor == actor)
    if action is not None:
        query = query.where(AuditEntry.action == action)
    with ctx.db.session() as s:
        total = s.scalar(select(func.count()).select_from(query.subquery()))
        rows = s.scalars(query.order_by(AuditEntry.id.desc()).offset(offset).limit(limit))
        return {"items": [entry_dict(e) for e in rows], "total": total, "offset": offset, "limit": limit}
