from fastapi import APIRouter, Request, Response
from sqlalchemy import select

from ..core import audit
from ..core.authz import is_member
from ..core.errors import Refusal
from ..vcs import catalog
from ..vcs.models import VC, Profile
from ..vcs.schemas import ProfileIn, ProfileOut, ProfilePatch
from ..vcs.views import profile_dict
from .common import Caller, Ctx, Member, require_admin

router = APIRouter(prefix="/profiles", tags=["profiles"])


@router.get("", response_model=list[ProfileOut])
def list_profiles(person: Member, ctx: Ctx) -> list[dict]:
    """Profiles offered by the caller's VCs (admins: the whole catalogue)."""
    with ctx.db.session() as s:
        offered = {p for vc in s.scalars(select(VC)) if is_member(person, vc.groups) for p in vc.profiles}
        rows = s.scalars(select(Profile).order_by(Profile.name))
        return [profile_dict(p) for p in rows if person.admin or p.name in offered]


@router.post("", response_model=ProfileOut, status_code=201)
def create_profile(body: ProfileIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: add a profile to the catalogue (409 if the name exists)."""
    require_admin(caller, "create profiles")
    with ctx.db.writing() as s:
        audit.record(s, caller, request, "profile.create", f"profile {body.name}", detail=body.model_dump(mode="json"))
        return profile_dict(catalog.create_profile(s, body))


@router.get("/{name}", response_model=ProfileOut)
def get_profile(name: str, person: Member, ctx: Ctx) -> dict:
    """Admins, and members of a VC that offers the profile (404 for anyone else)."""
    with ctx.db.session() as s:
        profile = profile_dict(catalog.get_profile(s, name))
        vcs = [vc for vc in s.scalars(select(VC)) if name in vc.profiles and is_member(person, vc.groups)]
    if not (person.admin or vcs):
        raise Refusal(404, f"there is no profile {name}")
    return profile


@router.patch("/{name}", response_model=ProfileOut)
def patch_profile(name: str, body: ProfilePatch, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: change a profile (existing allocations keep what they reserved)."""
    require_admin(caller, "change profiles")
    with ctx.db.writing() as s:
        detail = body.model_dump(mode="json", exclude_unset=True)
        audit.record(s, caller, request, "profile.patch", f"profile {name}", detail=detail)
        return profile_dict(catalog.patch_profile(s, name, body))


@router.delete("/{name}", status_code=204)
def delete_profile(name: str, caller: Caller, ctx: Ctx, request: Request) -> Response:
    """Admin: delete a profile; 409 naming the VCs that still offer it."""
    require_admin(caller, "delete profiles")
    with ctx.db.writing() as s:
        catalog.delete_profile(s, name)
        audit.record(s, caller, request, "profile.delete", f"profile {name}")
    return Response(status_code=204)
