from fastapi import APIRouter

from ..core.confinement import mode_of
from .common import Ctx

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(ctx: Ctx) -> dict[str, str]:
    """Anyone: ``{"status": "ok", "mode": "multi-user" | "single-person"}`` (who runs user code on
    the local backend: each person's own system account, or the platform's account; docs/security.md)."""
    return {"status": "ok", "mode": mode_of(ctx.settings)}
