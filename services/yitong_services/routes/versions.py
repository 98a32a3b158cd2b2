"""Versions of a dataset: commit, list, show, diff, delete."""

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from ..core.idempotency import Claim, once
from ..datasets import records as ds
from ..datasets.commit import commit
from ..datasets.manifest import diff
from ..datasets.quota import recount
from ..datasets.schemas import CommitIn, Committed, Diff, VersionOut
from ..datasets.views import one_version, versions_list
from .common import Caller, Ctx, Member

router = APIRouter(prefix="/datasets/{vc}/{name}", tags=["datasets"])


@router.post(
    "/versions",
    response_model=Committed,
    status_code=201,
    responses={200: {"description": "the manifest equals the parent's: the existing version, unchanged: true"}},
)
async def commit_version(
    vc: str, name: str, body: CommitIn, caller: Caller, person: Member, ctx: Ctx, response: Response, request: Request
) -> dict:
    """Members who see the dataset: commit a version whose objects are all uploaded; atomic.

    409 when ``parent`` is not the latest version; 422 naming bad paths or missing objects.
    With an ``Idempotency-Key`` header, a retry of a commit that made a version gets the first
    answer again (``Idempotent-Replayed: true``) instead of a 409; the same key with another
    request is a 422.
    """

    async def create(claim: Claim | None) -> dict:
        def record(s, version: dict) -> None:  # in the transaction that inserts the version
            if claim is not None:
                claim.store(s, 201, Committed.model_validate(version | {"unchanged": False}).model_dump(mode="json"))

        out, created = await run_in_threadpool(commit, ctx.storage, person, vc, name, body, record)
        if not created:
            response.status_code = 200
        return out | {"unchanged": not created}

    return await once(request, ctx, caller.name, "POST /datasets/{vc}/{name}/versions", create)


@router.get("/versions", response_model=list[VersionOut])
def list_versions(vc: str, name: str, person: Member, ctx: Ctx) -> list[dict]:
    """Versions, newest first: number, author, message, parent, files, bytes, tags."""
    with ctx.db.session() as s:
        return versions_list(s, ds.visible(s, person, vc, name))


@router.get("/versions/{ref}", response_model=VersionOut)
def get_version(vc: str, name: str, ref: str, person: Member, ctx: Ctx) -> dict:
    """One version; ``ref`` is a number, ``v<number>``, a tag or ``latest``."""
    with ctx.db.session() as s:
        d = ds.visible(s, person, vc, name)
        return one_version(s, d, ds.resolve(s, d, ref))


@router.delete("/versions/{ref}", status_code=204)
def delete_version(vc: str, name: str, ref: str, person: Member, ctx: Ctx) -> Response:
    """The owner or an admin: delete a version (409 naming what uses it); GC reclaims its objects.
    What no other version of the VC names stops counting toward its storage quota at once."""
    with ctx.db.writing() as s:
        d = ds.visible(s, person, vc, name)
        ds.require_owner(person, d, "delete versions of")
        ds.delete_version(s, d, ds.resolve(s, d, ref))
        owner = d.vc
    recount(ctx.storage, owner)
    return Response(status_code=204)


@router.get("/diff", response_model=Diff)
def diff_versions(
    vc: str,
    name: str,
    person: Member,
    ctx: Ctx,
    old: str | None = Query(None, alias="from", description="default: the parent of `to`"),
    new: str = Query("latest", alias="to"),
) -> dict:
    """Files added, removed and changed (with sizes) from one version to another."""
    with ctx.db.session() as s:
        d = ds.visible(s, person, vc, name)
        after = ds.resolve(s, d, new)
        before = ds.resolve(s, d, old) if old is not None else None
        if old is None and after.parent is not None:
            before = ds.resolve(s, d, str(after.parent))
    empty: dict = {"files": []}
    first = ctx.storage.manifest(before.manifest) if before else empty
    return diff(first, ctx.storage.manifest(after.manifest))
