from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from ..core import audit
from ..core.auth import person_for
from ..core.authz import Identity, Person, create_allocation_refusal, release_refusal
from ..core.context import Context
from ..core.errors import Refusal
from ..vcs import allocations as alloc
from ..vcs import placement
from ..vcs.models import Allocation
from ..vcs.schemas import AllocationIn, AllocationOut
from ..vcs.views import allocation_dict
from .common import Caller, Ctx

router = APIRouter(prefix="/allocations", tags=["allocations"])


def _allocate(
    ctx: Context, caller: Identity, request: Request, person: Person, body: AllocationIn
) -> tuple[dict, bool]:
    node = placement.node_name() if ctx.settings.backend == "local" else None
    out, created = alloc.allocate(ctx.db, person, body, ctx.inventory, node)
    if created and audit.audited(caller, person.name):
        with ctx.db.writing() as s:
            audit.record(
                s,
                caller,
                request,
                "allocation.create",
                f"allocation {out['id']}",
                owner=person.name,
                detail={"vc": body.vc, "profile": body.profile, "kind": body.kind, "ref": body.ref},
            )
    return out, created


@router.post(
    "",
    response_model=AllocationOut,
    status_code=201,
    responses={200: {"description": "the same (kind, ref) was already allocated: the existing one"}},
)
async def allocate(body: AllocationIn, caller: Caller, ctx: Ctx, request: Request, response: Response) -> dict:
    """Reserve a profile's resources in a VC atomically; 4xx says which VC/quota is in the way.

    People book ``kind: server`` for their own servers; ``kind: job`` belongs to the platform's
    admission queue. Only admins and the platform name another ``user``."""
    refused = create_allocation_refusal(caller, body.kind)
    if refused:
        raise Refusal(403, refused)
    person = await person_for(ctx, caller, body.user)
    out, created = await run_in_threadpool(_allocate, ctx, caller, request, person, body)
    if not created:
        response.status_code = 200
    return out


@router.get("", response_model=list[AllocationOut])
def list_allocations(
    caller: Caller, ctx: Ctx, vc: str | None = Query(None), user: str | None = Query(None)
) -> list[dict]:
    """Users: their own; admins and this service: all (filter with ``?vc=`` and ``?user=``)."""
    if not caller.privileged:
        if user not in (None, caller.name):
            raise Refusal(403, f"{caller.name} may not list the allocations of {user}")
        user = caller.name
    query = select(Allocation).order_by(Allocation.id)
    if vc is not None:
        query = query.where(Allocation.vc == vc)
    if user is not None:
        query = query.where(Allocation.user == user)
    with ctx.db.session() as s:
        return [allocation_dict(a) for a in s.scalars(query)]


def _find(ctx: Context, caller: Identity, allocation_id: int) -> tuple[str, str, str, str]:
    """(vc, owner, kind, ref) of an allocation the caller may see; 404 otherwise."""
    with ctx.db.session() as s:
        a = s.get(Allocation, allocation_id)
        if a is None or not (caller.privileged or (caller.kind == "user" and a.user == caller.name)):
            raise Refusal(404, f"there is no allocation {allocation_id}")
        return a.vc, a.user, a.kind, a.ref


def _release(ctx: Context, caller: Identity, request: Request, allocation_id: int, vc: str) -> None:
    with ctx.db.locked(vc) as s:
        a = s.get(Allocation, allocation_id)
        if a is None:
            raise Refusal(404, f"there is no allocation {allocation_id}")
        audit.record(
            s,
            caller,
            request,
            "allocation.release",
            f"allocation {allocation_id}",
            owner=a.user,
            detail={"vc": a.vc, "kind": a.kind, "ref": a.ref},
        )
        alloc.release(s, a)


@router.delete("/{allocation_id}", status_code=204)
async def release(
    caller: Caller, ctx: Ctx, request: Request, allocation_id: int = Path(ge=1, le=2**63 - 1)
) -> Response:
    """Admins and this service: release; a person: only a server allocation whose server is gone.

    A job's allocation is released when the job ends (cancel the job), a server's when the server
    stops (stop the server): 409 says so. Someone else's allocation answers 404."""
    vc, owner, kind, ref = await run_in_threadpool(_find, ctx, caller, allocation_id)
    running = False
    if kind == "server" and not caller.privileged:
        running = ref in await ctx.hub.active_servers_of(owner)
    refused = release_refusal(caller, kind, ref, running)
    if refused:
        raise Refusal(409, refused)
    await run_in_threadpool(_release, ctx, caller, request, allocation_id, vc)
    return Response(status_code=204)
