"""Dependencies shared by the route modules."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query

from ..core.auth import current_identity, person_for
from ..core.authz import Identity, Person, admin_refusal
from ..core.context import Context, context
from ..core.errors import Refusal
from ..core.limits import MAX_ID

Caller = Annotated[Identity, Depends(current_identity)]
Ctx = Annotated[Context, Depends(context)]
Id = Annotated[int, Path(ge=1, le=MAX_ID, description="an id: 1 to 2**63-1")]

# Routes that only block (the database, the store) are plain ``def``: FastAPI runs them in
# anyio's threadpool (its size is set once, in core/app.py). Routes that await the hub or a
# backend are ``async def`` and hand their blocking parts to ``run_in_threadpool``.


def require_admin(caller: Identity, what: str) -> None:
    refused = admin_refusal(caller, what)
    if refused:
        raise Refusal(403, refused)


def as_person(caller: Identity) -> Person:
    return Person(name=caller.name, admin=caller.privileged, groups=caller.groups)


async def caller_person(caller: Caller) -> Person:
    """The caller as a person of the authorization rules (a service counts as an admin)."""
    return as_person(caller)


async def target_person(ctx: Ctx, caller: Caller, user: str | None = Query(None)) -> Person:
    """The person ``?user=`` names (the caller without it): ``core.auth.person_for``."""
    return await person_for(ctx, caller, user)


Member = Annotated[Person, Depends(caller_person)]
Target = Annotated[Person, Depends(target_person)]
