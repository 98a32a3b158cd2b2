from fastapi import APIRouter, Request, Response
from sqlalchemy import select

from ..core import audit
from ..core.authz import is_member, member_refusal
from ..core.errors import Refusal
from ..vcs import catalog
from ..vcs.models import VC, Allocation
from ..vcs.schemas import VCIn, VCOut, VCPatch
from ..vcs.storage import uses
from ..vcs.views import allocations_by_vc, cluster, vc_dict
from .common import Caller, Ctx, Member, require_admin

router = APIRouter(prefix="/vcs", tags=["vcs"])


def _one(ctx, name: str) -> dict:  # type: ignore[no-untyped-def]
    with ctx.db.session() as s:
        vc = catalog.get_vc(s, name)
        allocs = s.scalars(select(Allocation).where(Allocation.vc == name)).all()
        return vc_dict(vc, allocs, uses(s, [vc])[vc.name], cluster(s, ctx.inventory))


@router.get("", response_model=list[VCOut])
def list_vcs(person: Member, ctx: Ctx) -> list[dict]:
    """The VCs the caller belongs to (admins: all), each with quota, used and free (the quota left, each device capped by what the cluster has unused: the picker's "free now")."""
    with ctx.db.session() as s:
        by_vc = allocations_by_vc(s)
        vcs = [vc for vc in s.scalars(select(VC).order_by(VC.name)) if is_member(person, vc.groups)]
        stored, where = uses(s, vcs), cluster(s, ctx.inventory)
        return [vc_dict(vc, by_vc.get(vc.name, []), stored[vc.name], where) for vc in vcs]


@router.post("", response_model=VCOut, status_code=201)
def create_vc(body: VCIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: create a VC (409 if the name exists, 422 naming unknown profiles)."""
    require_admin(caller, "create VCs")
    with ctx.db.writing() as s:
        audit.record(s, caller, request, "vc.create", f"vc {body.name}", detail=body.model_dump(mode="json"))
        return vc_dict(catalog.create_vc(s, body), [], None, cluster(s, ctx.inventory))


@router.get("/{vc}", response_model=VCOut)
def get_vc(vc: str, person: Member, ctx: Ctx) -> dict:
    """Members and admins: one VC (404 for an unknown VC and for one the caller is not a member of)."""
    out = _one(ctx, vc)
    if member_refusal(person, vc, out["groups"]):
        raise Refusal(404, f"there is no VC {vc}")
    return out


@router.patch("/{vc}", response_model=VCOut)
def patch_vc(vc: str, body: VCPatch, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: change description, quota, groups, profiles, user_caps, idle_timeout or storage_quota (null clears them);
    the change holds from the next request (the culler reads idle_timeout on every pass)."""
    require_admin(caller, "change VCs")
    with ctx.db.writing() as s:
        catalog.patch_vc(s, vc, body)
        audit.record(
            s, caller, request, "vc.patch", f"vc {vc}", detail=body.model_dump(mode="json", exclude_unset=True)
        )
    return _one(ctx, vc)


@router.delete("/{vc}", status_code=204)
def delete_vc(vc: str, caller: Caller, ctx: Ctx, request: Request) -> Response:
    """Admin: delete a VC; 409 naming the allocations that still use it."""
    require_admin(caller, "delete VCs")
    with ctx.db.writing() as s:
        catalog.delete_vc(s, vc)
        audit.record(s, caller, request, "vc.delete", f"vc {vc}")
    return Response(status_code=204)
