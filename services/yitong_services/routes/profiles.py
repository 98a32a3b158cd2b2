from fastapi import APIRouter, Request, Response
from sqlalchemy import select

from ..core import audit
from ..core.authz import is_member
from ..core.errors import Refusal
from ..vcs import catalog
from ..vcs.models import VC, Profile
from ..vcs.schemas import ProfileIn, ProfileOut, ProfilePatch
from ..vcs.views import profile_dict
from .common import Caller, Ctx, as_person, in_thread, require_admin

router = APIRouter(prefix="/profiles", tags=["profiles"])


@router.get("", response_model=list[ProfileOut])
async def list_profiles(caller: Caller, ctx: Ctx) -> list[dict]:
    """Profiles offered by the caller's VCs (admins: the whole catalogue)."""
    person = as_person(caller)

    def work() -> list[dict]:
        with ctx.db.session() as s:
            offered = {p for vc in s.scalars(select(VC)) if is_member(person, vc.groups) for p in vc.profiles}
            rows = s.scalars(select(Profile).order_by(Profile.name))
            return [profile_dict(p) for p in rows if caller.privileged or p.name in offered]

    return await in_thread(work)


@router.post("", response_model=ProfileOut, status_code=201)
async def create_profile(body: ProfileIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: add a profile to the catalogue (409 if the name exists)."""
    require_admin(caller, "create profiles")

    def work() -> dict:
        with ctx.db.writing() as s:
            audit.record(
                s, caller, request, "profile.create", f"profile {body.name}", detail=body.model_dump(mode="json")
            )
            return profile_dict(catalog.create_profile(s, body))

    return await in_thread(work)


@router.get("/{name}", response_model=ProfileOut)
async def get_profile(name: str, caller: Caller, ctx: Ctx) -> dict:
    """Admins, and members of a VC that offers the profile (404 for anyone else)."""
    person = as_person(caller)

    def work() -> dict:
        with ctx.db.session() as s:
            profile = profile_dict(catalog.get_profile(s, name))
            vcs = [vc for vc in s.scalars(select(VC)) if name in vc.profiles and is_member(person, vc.groups)]
        if not (caller.privileged or vcs):
            raise Refusal(404, f"there is no profile {name}")
        return profile

    return await in_thread(work)


@router.patch("/{name}", response_model=ProfileOut)
async def patch_profile(name: str, body: ProfilePatch, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: change a profile (existing allocations keep what they reserved)."""
    require_admin(caller, "change profiles")

    def work() -> dict:
        with ctx.db.writing() as s:
            audit.record(
                s,
                caller,
                request,
                "profile.patch",
                f"profile {name}",
                detail=body.model_dump(mode="json", exclude_unset=True),
            )
            return profile_dict(catalog.patch_profile(s, name, body))

    return await in_thread(work)


@router.delete("/{name}", status_code=204)
async def delete_profile(name: str, caller: Caller, ctx: Ctx, request: Request) -> Response:
    """Admin: delete a profile; 409 naming the VCs that still offer it."""
    require_admin(caller, "delete profiles")

    def work() -> None:
        with ctx.db.writing() as s:
            catalog.delete_profile(s, name)
            audit.record(s, caller, request, "profile.delete", f"profile {name}")

    await in_thread(work)
    return Response(status_code=204)
