"""Uploading objects: which are missing, packs of small ones, resumable uploads of large ones.

Every answer here is about the caller: an object counts as present only when the caller may
read it (objaccess.py), so none of these routes tells whether anyone else holds given bytes.
"""

import asyncio
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from ..core.authz import Person
from ..core.context import Context
from ..core.errors import Refusal
from ..datasets.appender import BufferPool
from ..datasets.ingest import PackIngest, too_big
from ..datasets.manifest import hash_refusal
from ..datasets.objaccess import missing_for, readable_sizes, reader
from ..datasets.packs import PackError
from ..datasets.quota import over as over_sentence
from ..datasets.quota import precheck, room, settle, upload_vc
from ..datasets.schemas import Hashes, Missing, Stored, UploadState
from .common import Caller, Ctx, Member

router = APIRouter(prefix="/objects", tags=["objects"])
BATCH = 1 << 20
UPLOAD_BATCH = 8 << 20  # resumable uploads: write (and hash) in blocks of this size
_locks: dict[tuple[str, str], asyncio.Lock] = {}
_PACK_BUFFERS = BufferPool(BATCH)
_UPLOAD_BUFFERS = BufferPool(UPLOAD_BATCH)


def _check_hash(h: str) -> None:
    refused = hash_refusal(h)
    if refused:
        raise Refusal(422, refused)


ForVC = Annotated[
    str | None,
    Query(
        max_length=32,
        description="the VC the bytes are for: checked against its storage quota before they are written"
        " (413) and charged to it; required when one of the caller's VCs has a storage_quota",
    ),
]


def _for_vc(ctx: Context, person: Person, vc: str | None, h: str | None, size: int | None, what: str) -> str | None:
    with ctx.db.session() as s:
        name = upload_vc(s, person, vc)
        if size is not None:
            precheck(s, name, h, size, what)
        return name


def _settle(ctx: Context, vc: str | None, what: str):  # type: ignore[no-untyped-def]
    if vc is None:
        return None
    return lambda session, sizes: settle(ctx.storage, session, vc, sizes, what, upload=True)


def _over(ctx: Context, vc: str | None, what: str, received: int) -> str:
    """The quota's sentence once a streamed pack has passed the room its VC had."""
    with ctx.db.session() as s:
        return over_sentence(s, vc, received, what)


def _room(ctx: Context, vc: str | None) -> int | None:
    with ctx.db.session() as s:
        return room(s, vc)


def _int_header(name: str, value: str | None) -> int:
    if value is None or not value.strip().isdigit():
        raise Refusal(422, f"header {name} must be a byte count, got {value!r}")
    return int(value)


@router.post("/missing", response_model=Missing)
def missing_objects(body: Hashes, person: Member, ctx: Ctx) -> dict:
    """Which of these hashes (at most 200,000) the caller must upload before committing: those
    the store lacks and those the caller may not read (the same answer: a hash is not a read key)."""
    with ctx.db.session() as s:
        return {"missing": missing_for(s, reader(s, person), body.hashes)}


@router.post(
    "/pack", response_model=Stored, openapi_extra={"requestBody": {"content": {"application/octet-stream": {}}}}
)
async def upload_pack(request: Request, caller: Caller, person: Member, ctx: Ctx, vc: ForVC = None) -> dict:
    """Upload small objects as one pack of ``<32-byte hash><8-byte size><bytes>`` records.

    Each record is hashed as it streams; a bad record is 422 naming the hash and nothing of the
    pack is indexed; a body over ``storage.max_upload_bytes`` is 413 before it is stored, and so
    is one past the storage quota of ``vc`` (on its Content-Length, or as it streams without one).
    """
    storage = ctx.storage
    declared = request.headers.get("content-length")
    size = int(declared) if declared and declared.isdigit() else None
    if size is not None and size > storage.limit:
        raise Refusal(413, too_big("the pack upload", size, storage.limit))
    what = "this pack upload"
    name = await run_in_threadpool(_for_vc, ctx, person, vc, None, size, what)
    left = await run_in_threadpool(_room, ctx, name) if size is None else None

    ingest = await run_in_threadpool(
        PackIngest,
        storage.store,
        storage.db,
        storage.limit,
        caller.name,
        left,
        _settle(ctx, name, what),
        partial(_over, ctx, name, what),
    )
    try:
        await _pipelined_body(request, _PACK_BUFFERS, ingest.feed)
        return await run_in_threadpool(ingest.commit)
    except PackError as e:
        await run_in_threadpool(ingest.abort, e)
        raise Refusal(e.status, str(e)) from e
    except BaseException as e:
        await run_in_threadpool(ingest.abort, e)
        raise


async def _blocks(request: Request, buffers: list[memoryview]):  # type: ignore[no-untyped-def]
    """The body in blocks the size of ``buffers`` (the last one shorter), as views of the two
    buffers used in turn: a block stays valid while the next one fills, so a thread can write
    it meanwhile (:func:`_pipelined`), and must be done with it before the one after is asked for."""
    size = len(buffers[0])
    turn, pos = 0, 0
    view = buffers[0]
    async for received in request.stream():
        chunk = memoryview(received)
        while chunk:
            take = min(size - pos, len(chunk))
            view[pos : pos + take] = chunk[:take]
            pos += take
            chunk = chunk[take:]
            if pos == size:
                yield view
                turn, pos = 1 - turn, 0
                view = buffers[turn]
    if pos:
        yield view[:pos]


async def _pipelined_body(request: Request, pool: BufferPool, work, before=None) -> None:  # type: ignore[no-untyped-def]
    """:func:`_pipelined` over the body of ``request`` in blocks of two pooled buffers."""
    buffers = pool.take(2)
    try:
        await _pipelined(_blocks(request, buffers), work, before)
    finally:
        pool.give(buffers)  # _pipelined has waited for the last write


async def _pipelined(blocks, work, before=None) -> None:  # type: ignore[no-untyped-def]
    """``await run_in_threadpool(work, block)`` for each block, in order, while the next block arrives;
    ``before(block)`` (on the event loop) may stop the loop early by returning false."""
    pending: asyncio.Future | None = None
    try:
        async for block in blocks:
            if pending is not None:
                await pending
                pending = None
            if before is not None and not before(block):
                break
            pending = asyncio.ensure_future(run_in_threadpool(work, block))
        if pending is not None:
            await pending
            pending = None
    finally:
        if pending is not None:  # an error on the way: let the write finish before cleaning up
            await asyncio.gather(pending, return_exceptions=True)


def _readable_size(ctx: Context, person: Person, h: str) -> int | None:
    with ctx.db.session() as s:
        return readable_sizes(s, reader(s, person), [h]).get(h)


@router.head("/{hash}/upload")
def upload_state(hash: str, caller: Caller, person: Member, ctx: Ctx) -> Response:
    """``Upload-Complete: 1`` when the object is stored and the caller may read it, else
    ``Upload-Offset``: where the caller's own upload resumes."""
    _check_hash(hash)
    size = _readable_size(ctx, person, hash)
    if size is not None:
        return Response(headers={"Upload-Complete": "1", "Upload-Offset": str(size)})
    offset = ctx.storage.spool.person(caller.name).offset(hash)
    return Response(headers={"Upload-Offset": str(offset)})


@router.patch("/{hash}/upload", response_model=UploadState)
async def upload_chunk(
    hash: str,
    request: Request,
    caller: Caller,
    person: Member,
    ctx: Ctx,
    upload_offset: str | None = Header(None),
    upload_length: str | None = Header(None),
    vc: ForVC = None,
) -> dict:
    """Append the body at ``Upload-Offset`` (409 with the right offset otherwise) to an upload of
    ``Upload-Length`` bytes; the last piece is hashed and moved into the store (422 on mismatch).
    Bytes the store holds but the caller may not read are received and checked all the same.
    An ``Upload-Length`` past the storage quota of ``vc`` is 413 before any byte is written."""
    _check_hash(hash)
    storage = ctx.storage
    offset = _int_header("Upload-Offset", upload_offset)
    length = _int_header("Upload-Length", upload_length)
    if length > storage.limit:
        raise Refusal(413, too_big(f"upload of object {hash}", length, storage.limit))
    if await run_in_threadpool(_readable_size, ctx, person, hash) is not None:
        return {"offset": length, "complete": True}
    what = f"the upload of object {hash}"
    name = await run_in_threadpool(_for_vc, ctx, person, vc, hash, length, what)
    spool = storage.spool.person(caller.name)
    key = (str(spool.directory), hash)
    lock = _locks.setdefault(key, asyncio.Lock())
    if lock.locked():
        raise Refusal(409, f"another upload of object {hash} is in progress")
    async with lock:
        try:
            return await _append(spool, hash, offset, length, request, _settle(ctx, name, what))
        finally:
            _locks.pop(key, None)


async def _append(spool, h: str, offset: int, length: int, request: Request, settled=None) -> dict:  # type: ignore[no-untyped-def]
    await run_in_threadpool(spool.check_offset, h, offset)
    if offset > length:
        raise Refusal(422, f"upload of object {h}: Upload-Offset {offset} is past Upload-Length {length}")
    hasher = spool.hasher(h, offset)
    f = await run_in_threadpool(spool.open, h)
    accepted, hashed, overrun = 0, [0], False

    def fits(block: memoryview) -> bool:
        nonlocal accepted, overrun
        if offset + accepted + len(block) > length:
            overrun = True
            return False
        accepted += len(block)
        return True

    def write(block: memoryview) -> None:
        spool.write(f, block, hasher)
        hashed[0] += len(block)  # written and hashed

    try:
        await _pipelined_body(request, _UPLOAD_BUFFERS, write, fits)
    finally:
        size = await run_in_threadpool(spool.close, f, offset if overrun else None)
        # the hasher has seen offset + hashed bytes: keep it only when that is the partial
        spool.keep(h, hasher if size == offset + hashed[0] else None)
    if overrun:
        raise Refusal(422, f"upload of object {h}: the body runs past Upload-Length {length}; nothing of it was kept")
    if size == length:
        await run_in_threadpool(spool.finish, h, length, spool.hasher(h, length), settled)
        return {"offset": length, "complete": True}
    return {"offset": size, "complete": False}
