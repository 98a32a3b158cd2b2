from fastapi import APIRouter
from sqlalchemy import select

from ..core.accounts import AccountClash
from ..core.authz import Person, is_member
from ..core.confinement import account_for, pid_namespace_usable, server_cgroup
from ..core.errors import Refusal
from ..vcs import quota
from ..vcs.allocations import reason
from ..vcs.devices import placement, visible_env_names
from ..vcs.models import VC, Profile
from ..vcs.quantities import describe
from ..vcs.schemas import SpawnOptions
from ..vcs.views import Cluster, allocations_by_vc, profile_dict, profile_resources, vc_dict
from .common import Ctx, Target

router = APIRouter(tags=["spawn-options"])


def build(ctx, person: Person) -> dict:  # type: ignore[no-untyped-def]
    """The picker's model: the user's VCs, each profile marked ``available`` with a ``reason``, and
    (multi-user mode) the system account the server runs as, created here on first use; each
    accelerator profile's ``placement`` comes from the settings' ``devices`` table."""
    devices = ctx.settings.devices
    with ctx.db.session() as s:
        by_vc = allocations_by_vc(s)
        profiles = {p.name: p for p in s.scalars(select(Profile))}
        on = Cluster(ctx.inventory, quota.total(a.resources for group in by_vc.values() for a in group))
        vcs = []
        for vc in s.scalars(select(VC).order_by(VC.name)):
            if not is_member(person, vc.groups):
                continue
            d = vc_dict(vc, by_vc.get(vc.name, []), None, on)
            options = []
            for name in vc.profiles:
                if name not in profiles:
                    continue
                resources = profile_resources(profiles[name])
                why = reason(s, vc, person, resources, ctx.inventory)
                accelerator = profiles[name].accelerator
                where = placement(accelerator["type"], devices) if accelerator else None
                options.append(
                    profile_dict(profiles[name])
                    | {"available": why is None, "reason": why, "placement": where, "size": describe(resources)}
                )
            now = d["free"]  # quota.vc_free: the same "free" as GET /vcs (the sidebar, yt vc ls)
            vcs.append(
                {k: d[k] for k in ("name", "description", "quota", "used", "free")}
                | {"free_now": now, "free_now_text": describe(now), "quota_text": describe(d["quota"])}
                | {"profiles": options}
            )
    try:
        account = account_for(ctx.settings, person.name)
    except AccountClash as e:
        raise Refusal(409, str(e)) from None
    if account is not None:  # the server in a PID namespace of its own (core/pidns.py)
        account["pid_namespace"] = pid_namespace_usable(ctx.settings)
        account["cgroup"] = server_cgroup(ctx.settings)  # its limits (core/cgroups.py)
    return {"user": person.name, "vcs": vcs, "account": account, "visible_env": visible_env_names(devices)}


@router.get("/spawn-options", response_model=SpawnOptions)
def spawn_options(person: Target, ctx: Ctx) -> dict:
    """The user themself, an admin, or this service (``?user=`` required for a service)."""
    return build(ctx, person)
