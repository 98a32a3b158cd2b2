from fastapi import APIRouter, Query, Response
from sqlalchemy import select

from .. import allocations as alloc
from ..auth import person_for
from ..authz import act_for_refusal, release_refusal
from ..errors import Refusal
from ..models import Allocation
from ..schemas import AllocationIn, AllocationOut
from ..views import allocation_dict
from .common import Caller, Ctx, in_thread

router = APIRouter(prefix="/allocations", tags=["allocations"])


@router.post(
    "",
    response_model=AllocationOut,
    status_code=201,
    responses={200: {"description": "the same (kind, ref) was already allocated: the existing one"}},
)
async def allocate(body: AllocationIn, caller: Caller, ctx: Ctx, response: Response) -> dict:
    """Reserve a profile's resources in a VC atomically; 4xx says which VC/quota is in the way."""
    if body.user is not None:
        refused = act_for_refusal(caller, body.user)
        if refused:
            raise Refusal(403, refused)
    person = await person_for(ctx, caller, body.user)
    out, created = await in_thread(alloc.allocate, ctx.db, person, body, ctx.inventory)
    if not created:
        response.status_code = 200
    return out


@router.get("", response_model=list[AllocationOut])
async def list_allocations(
    caller: Caller, ctx: Ctx, vc: str | None = Query(None), user: str | None = Query(None)
) -> list[dict]:
    """Users: their own; admins and this service: all (filter with ``?vc=`` and ``?user=``)."""
    if not caller.privileged:
        if user not in (None, caller.name):
            raise Refusal(403, f"{caller.name} may not list the allocations of {user}")
        user = caller.name

    def work() -> list[dict]:
        query = select(Allocation).order_by(Allocation.id)
        if vc is not None:
            query = query.where(Allocation.vc == vc)
        if user is not None:
            query = query.where(Allocation.user == user)
        with ctx.db.session() as s:
            return [allocation_dict(a) for a in s.scalars(query)]

    return await in_thread(work)


@router.delete("/{allocation_id}", status_code=204)
async def release(allocation_id: int, caller: Caller, ctx: Ctx) -> Response:
    """The owner, an admin or this service: release the resources."""

    def work() -> None:
        with ctx.db.session() as s, s.begin():
            a = s.get(Allocation, allocation_id)
            if a is None:
                raise Refusal(404, f"there is no allocation {allocation_id}")
            refused = release_refusal(caller, a.user, allocation_id)
            if refused:
                raise Refusal(403, refused)
            alloc.release(s, a)

    await in_thread(work)
    return Response(status_code=204)
