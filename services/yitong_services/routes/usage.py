from fastapi import APIRouter

from ..vcs.schemas import Usage
from ..vcs.views import usage as usage_view
from .common import Caller, Ctx, require_admin

router = APIRouter(tags=["usage"])


@router.get("/usage", response_model=Usage)
def usage(caller: Caller, ctx: Ctx) -> dict:
    """Admin: the backend's inventory, cluster-wide usage, and per-VC quota, used, free."""
    require_admin(caller, "read usage")
    with ctx.db.session() as s:
        return usage_view(s, ctx.settings.backend, ctx.inventory)
