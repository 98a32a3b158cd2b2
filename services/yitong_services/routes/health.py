from typing import Any

from fastapi import APIRouter

from ..core.confinement import limits, mode_of
from .common import Ctx

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(ctx: Ctx) -> dict[str, Any]:
    """Anyone: ``{"status": "ok", "mode": "multi-user" | "single-person"}`` (who runs user code on
    the local backend: each person's own system account, or the platform's account; docs/security.md)
    and ``limits``: ``{"by": "cgroup-v2" | "cgroup-v1" | "off" | "none", "message": sentence}`` (what
    holds notebooks and jobs to their size, or why nothing does)."""
    mode = mode_of(ctx.settings)
    return {"status": "ok", "mode": mode, "limits": limits(ctx.settings, mode)}
