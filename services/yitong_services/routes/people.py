"""``/people``: an admin adds a person (the console's "Add person"; ``yitong-passwd add`` is the
same on the host): the hub user, the password and the VC groups, through the hub's REST API."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from ..core import audit
from ..core.errors import Refusal
from ..vcs.models import VC
from ..vcs.people import PersonIn, PersonOut, groups_for, normalize_name
from .common import Caller, Ctx, require_admin

router = APIRouter(tags=["people"])


def _vc_groups(ctx: Ctx, names: list[str]) -> dict[str, list[str]]:
    with ctx.db.session() as s:
        return {vc.name: list(vc.groups or []) for vc in s.scalars(select(VC).where(VC.name.in_(names)))}


def _record(ctx: Ctx, caller: Caller, request: Request, name: str, groups: list[str], created: bool) -> None:
    with ctx.db.writing() as s:
        audit.record(s, caller, request, "person.add", f"user {name}", detail={"groups": groups, "created": created})


@router.post("/people", response_model=PersonOut, status_code=201)
async def add_person(body: PersonIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Admin: make ``name`` a hub user with a password (given, or generated and answered once) and
    a member of ``vcs`` (each VC's first hub group) and ``groups``. An existing user gets the new
    password and the groups. 422 for a name JupyterHub refuses or a VC without groups, 404 for an
    unknown VC, 409 when logins come from an identity provider (people are the provider's)."""
    require_admin(caller, "add people")
    name = normalize_name(body.name)
    groups = groups_for(await run_in_threadpool(_vc_groups, ctx, body.vcs), body.vcs, body.groups)
    passwords, generated = await ctx.hub.set_password(name, body.password)
    if not passwords:
        raise Refusal(409, "logins come from an identity provider here: people and their groups are the provider's")
    created = await ctx.hub.create_user(name)
    for group in groups:
        await ctx.hub.add_to_group(group, name)
    await run_in_threadpool(_record, ctx, caller, request, name, groups, created)
    return {"name": name, "created": created, "groups": groups, "vcs": body.vcs, "password": generated}
