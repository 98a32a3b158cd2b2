"""Dependencies shared by the route modules."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypeVar

from anyio import to_thread
from fastapi import Depends, Path

from ..core.auth import current_identity
from ..core.authz import Identity, Person, admin_refusal
from ..core.context import Context, context
from ..core.errors import Refusal
from ..core.limits import MAX_ID

T = TypeVar("T")

Caller = Annotated[Identity, Depends(current_identity)]
Ctx = Annotated[Context, Depends(context)]
Id = Annotated[int, Path(ge=1, le=MAX_ID, description="an id: 1 to 2**63-1")]


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run blocking database work in the threadpool (never on the event loop)."""
    return await to_thread.run_sync(partial(fn, *args, **kwargs))


def require_admin(caller: Identity, what: str) -> None:
    refused = admin_refusal(caller, what)
    if refused:
        raise Refusal(403, refused)


def as_person(caller: Identity) -> Person:
    return Person(name=caller.name, admin=caller.privileged, groups=caller.groups)
