from fastapi import APIRouter
from sqlalchemy import select

from ..core.authz import is_member
from ..vcs.models import VC
from ..vcs.schemas import Me
from .common import Caller, Ctx, Member

router = APIRouter(tags=["me"])


@router.get("/me", response_model=Me)
def me(caller: Caller, person: Member, ctx: Ctx) -> dict:
    """The caller as this service sees them: name, admin flag, hub groups, VC names."""
    with ctx.db.session() as s:
        vcs = [vc.name for vc in s.scalars(select(VC).order_by(VC.name)) if is_member(person, vc.groups)]
    return {
        "name": caller.name,
        "kind": caller.kind,
        "admin": caller.privileged,
        "groups": list(caller.groups),
        "vcs": vcs,
    }
