from fastapi import APIRouter, Request, Response
from sqlalchemy import select

from ..core import audit
from ..core.authz import is_member, member_refusal
from ..core.errors import Refusal
from ..vcs import catalog
from ..vcs.models import VC, Allocation
from ..vcs.schemas import VCIn, VCOut, VCPatch
from ..vcs.views import allocations_by_vc, vc_dict
from .common import Caller, Ctx, as_person, in_thread, require_admin

router = APIRouter(prefix="/vcs", tags=["vcs"])


def _one(ctx, name: str) -> dict:  # type: ignore[no-untyped-def]
    with ctx.db.session() as s:
        vc = catalog.get_vc(s, name)
        return vc_dict(vc, s.scalars(select(Allocation).where(Allocation.vc == name)))


@router.get("", response_model=list[VCOut])
async def list_vcs(caller: Caller, ctx: Ctx) -> list[dict]:
    """The VCs the caller belongs to (admins: all), each with quota, used and free."""
    person = as_person(caller)

    def work() -> list[dict]:
        with ctx.db.session() as s:
            by_vc = allocations_by_vc(s)
            vcs = s.scalars(select(VC).order_by(VC.name))
            return [vc_dict(vc, by_vc.get(vc.name, [])) for vc in vcs if is_member(person, vc.groups)]

    return await in_thread(work)


@router.post("", response_model=VCOut, status_code=201)
async def create_vc(body: VCIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: create a VC (409 if the name exists, 422 naming unknown profiles)."""
    require_admin(caller, "create VCs")

    def work() -> dict:
        with ctx.db.writing() as s:
            audit.record(s, caller, request, "vc.create", f"vc {body.name}", detail=body.model_dump(mode="json"))
            return vc_dict(catalog.create_vc(s, body), [])

    return await in_thread(work)


@router.get("/{vc}", response_model=VCOut)
async def get_vc(vc: str, caller: Caller, ctx: Ctx) -> dict:
    """Members and admins: one VC (404 for an unknown VC and for one the caller is not a member of)."""
    out = await in_thread(_one, ctx, vc)
    if member_refusal(as_person(caller), vc, out["groups"]):
        raise Refusal(404, f"there is no VC {vc}")
    return out


@router.patch("/{vc}", response_model=VCOut)
async def patch_vc(vc: str, body: VCPatch, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: change description, quota, groups, profiles or user_caps."""
    require_admin(caller, "change VCs")

    def work() -> None:
        with ctx.db.writing() as s:
            catalog.patch_vc(s, vc, body)
            audit.record(
                s, caller, request, "vc.patch", f"vc {vc}", detail=body.model_dump(mode="json", exclude_unset=True)
            )

    await in_thread(work)
    return await in_thread(_one, ctx, vc)


@router.delete("/{vc}", status_code=204)
async def delete_vc(vc: str, caller: Caller, ctx: Ctx, request: Request) -> Response:
    """Admin: delete a VC; 409 naming the allocations that still use it."""
    require_admin(caller, "delete VCs")

    def work() -> None:
        with ctx.db.writing() as s:
            catalog.delete_vc(s, vc)
            audit.record(s, caller, request, "vc.delete", f"vc {vc}")

    await in_thread(work)
    return Response(status_code=204)
