"""A version's contents: manifest, object bytes (with ``Range``), pack fetch, materialised tree."""

from fastapi import APIRouter, Header, Response
from fastapi.responses import StreamingResponse

from ..core.authz import Person
from ..core.context import Context
from ..core.errors import Refusal
from ..datasets import records as ds
from ..datasets.manifest import hashes
from ..datasets.materialize import materialize
from ..datasets.objindex import Location, locate
from ..datasets.schemas import Hashes, Manifest, Materialized
from ..datasets.streams import parse_range, records
from .common import Ctx, Member

router = APIRouter(prefix="/datasets/{vc}/{name}/versions/{ref}", tags=["datasets"])
OCTETS = "application/octet-stream"


def _manifest(ctx: Context, person: Person, vc: str, name: str, ref: str) -> tuple[str, int, dict]:
    with ctx.db.session() as s:
        d = ds.visible(s, person, vc, name)
        v = ds.resolve(s, d, ref)
    return v.manifest, v.number, ctx.storage.manifest(v.manifest)


def _locations(ctx: Context, vc: str, name: str, number: int, manifest: dict, wanted: list[str]) -> list[Location]:
    named = hashes(manifest)
    stray = [h for h in wanted if h not in named]
    if stray:
        raise Refusal(404, f"object {stray[0]} is not in version {number} of dataset {vc}/{name}")
    with ctx.db.session() as s:
        found = locate(s, wanted)
    gone = [h for h in wanted if h not in found]
    if gone:
        raise Refusal(
            500, f"dataset {vc}/{name} version {number}: object {gone[0]} is missing from the store; run verify"
        )
    return [found[h] for h in dict.fromkeys(wanted)]


@router.get("/manifest", response_model=Manifest)
def get_manifest(vc: str, name: str, ref: str, person: Member, ctx: Ctx) -> dict:
    """The version's manifest: every file's path, size and BLAKE3, sorted by path."""
    return _manifest(ctx, person, vc, name, ref)[2]


@router.get("/objects/{hash}", response_class=StreamingResponse, responses={206: {"description": "a byte range"}})
def get_object(
    vc: str, name: str, ref: str, hash: str, person: Member, ctx: Ctx, range: str | None = Header(None)
) -> Response:
    """The bytes of one object of this version, streamed (a single ``Range`` is honoured)."""
    _, number, manifest = _manifest(ctx, person, vc, name, ref)
    [loc] = _locations(ctx, vc, name, number, manifest, [hash])
    try:
        span = parse_range(range, loc.size)
    except ValueError as e:
        raise Refusal(416, f"object {hash}: {e}") from e
    start, end = span or (0, loc.size)
    headers = {"Content-Length": str(end - start), "Accept-Ranges": "bytes", "ETag": f'"{hash}"'}
    if span:
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{loc.size}"
    chunks = ctx.storage.chunks(loc, start, end)
    return StreamingResponse(chunks, status_code=206 if span else 200, media_type=OCTETS, headers=headers)


@router.post("/fetch", response_class=StreamingResponse)
def fetch_objects(vc: str, name: str, ref: str, body: Hashes, person: Member, ctx: Ctx) -> Response:
    """A pack stream (``<hash><size><bytes>`` records) of the requested objects of this version."""
    _, number, manifest = _manifest(ctx, person, vc, name, ref)
    locs = _locations(ctx, vc, name, number, manifest, body.hashes)
    return StreamingResponse(records(ctx.storage, locs), media_type=OCTETS)


@router.post("/materialize", response_model=Materialized)
def materialize_version(vc: str, name: str, ref: str, person: Member, ctx: Ctx) -> dict:
    """A read-only tree of the version on the service's disk (built once, hardlinked from the cache)."""
    h, _, _ = _manifest(ctx, person, vc, name, ref)
    return {"path": str(materialize(ctx.storage, h))}
