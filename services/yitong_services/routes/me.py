from fastapi import APIRouter
from sqlalchemy import select

from ..core.authz import is_member
from ..vcs.models import VC
from ..vcs.schemas import Me
from .common import Caller, Ctx, as_person, in_thread

router = APIRouter(tags=["me"])


@router.get("/me", response_model=Me)
async def me(caller: Caller, ctx: Ctx) -> dict:
    """The caller as this service sees them: name, admin flag, hub groups, VC names."""
    person = as_person(caller)

    def work() -> list[str]:
        with ctx.db.session() as s:
            return [vc.name for vc in s.scalars(select(VC).order_by(VC.name)) if is_member(person, vc.groups)]

    return {
        "name": caller.name,
        "kind": caller.kind,
        "admin": caller.privileged,
        "groups": list(caller.groups),
        "vcs": await in_thread(work),
    }
