from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text

from ..core.confinement import limits, mode_of
from ..core.errors import DATABASE_RETRY_AFTER, database_failure
from .common import Ctx

router = APIRouter(tags=["health"])


@router.get(
    "/health",
    responses={503: {"description": "the database does not answer (``Retry-After`` says when to ask again)"}},
)
def health(ctx: Ctx) -> dict[str, Any]:
    """Anyone: ``{"status": "ok", "mode": "multi-user" | "single-person"}`` (who runs user code on
    the local backend: each person's own system account, or the platform's account; docs/security.md)
    and ``limits``: ``{"by": "cgroup-v2" | "cgroup-v1" | "off" | "none", "message": sentence}`` (what
    holds notebooks and jobs to their size, or why nothing does),
    once the database has answered a query; else 503 ``{"status": "unavailable", "detail": ...}``."""
    mode = mode_of(ctx.settings)
    try:
        with ctx.db.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        failure = database_failure(exc)
        if failure is None:
            raise
        return JSONResponse(  # type: ignore[return-value]
            {"status": "unavailable", "mode": mode, "detail": failure[1]},
            status_code=503,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER)},
        )
    return {"status": "ok", "mode": mode, "limits": limits(ctx.settings, mode)}
