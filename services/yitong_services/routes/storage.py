"""Store maintenance (admins): garbage collection and verification."""

from fastapi import APIRouter, Query

from ..datasets.gc import collect
from ..datasets.schemas import GCResult, VerifyResult
from ..datasets.verify import verify
from .common import Caller, Ctx, require_admin

router = APIRouter(prefix="/storage", tags=["storage"])
MAX_GRACE = 100 * 365 * 86400


@router.post("/gc", response_model=GCResult)
def garbage_collect(
    caller: Caller,
    ctx: Ctx,
    grace: float | None = Query(
        None, ge=0, le=MAX_GRACE, description="seconds (at most 100 years); default storage.gc_grace"
    ),
) -> dict:
    """Admin: delete objects, packs and manifests no version references, and stale temp files."""
    require_admin(caller, "collect garbage in the dataset store")
    return collect(ctx.storage, grace)


@router.post("/verify", response_model=VerifyResult)
def verify_store(caller: Caller, ctx: Ctx) -> dict:
    """Admin: rehash every stored object and manifest; report corrupt and missing ones."""
    require_admin(caller, "verify the dataset store")
    return verify(ctx.storage)
