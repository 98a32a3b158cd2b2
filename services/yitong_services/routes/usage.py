from fastapi import APIRouter

from ..vcs.schemas import Usage
from ..vcs.views import usage as usage_view
from .common import Caller, Ctx, in_thread, require_admin

router = APIRouter(tags=["usage"])


@router.get("/usage", response_model=Usage)
async def usage(caller: Caller, ctx: Ctx) -> dict:
    """Admin: the backend's inventory, cluster-wide usage, and per-VC quota, used, free."""
    require_admin(caller, "read usage")

    def work() -> dict:
        with ctx.db.session() as s:
            return usage_view(s, ctx.settings.backend, ctx.inventory)

    return await in_thread(work)
