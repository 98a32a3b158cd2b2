from fastapi import APIRouter
from sqlalchemy import select

from ..core.authz import Person, is_member
from ..core.confinement import account_for
from ..vcs.allocations import reason
from ..vcs.models import VC, Profile
from ..vcs.schemas import SpawnOptions
from ..vcs.views import allocations_by_vc, profile_dict, profile_resources, vc_dict
from .common import Ctx, Target

router = APIRouter(tags=["spawn-options"])


def build(ctx, person: Person) -> dict:  # type: ignore[no-untyped-def]
    """The picker's model: the user's VCs, each profile marked ``available`` with a ``reason``, and
    (multi-user mode) the system account the server runs as, created here on first use."""
    with ctx.db.session() as s:
        by_vc = allocations_by_vc(s)
        profiles = {p.name: p for p in s.scalars(select(Profile))}
        vcs = []
        for vc in s.scalars(select(VC).order_by(VC.name)):
            if not is_member(person, vc.groups):
                continue
            d = vc_dict(vc, by_vc.get(vc.name, []))
            options = []
            for name in vc.profiles:
                if name not in profiles:
                    continue
                why = reason(s, vc, person, profile_resources(profiles[name]), ctx.inventory)
                options.append(profile_dict(profiles[name]) | {"available": why is None, "reason": why})
            vcs.append({k: d[k] for k in ("name", "description", "quota", "used", "free")} | {"profiles": options})
    return {"user": person.name, "vcs": vcs, "account": account_for(ctx.settings, person.name)}


@router.get("/spawn-options", response_model=SpawnOptions)
def spawn_options(person: Target, ctx: Ctx) -> dict:
    """The user themself, an admin, or this service (``?user=`` required for a service)."""
    return build(ctx, person)
