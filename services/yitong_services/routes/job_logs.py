"""Per-rank logs of a job's current attempt: a snapshot, or ``?follow=1`` streamed until the job ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from ..core.authz import Person
from ..core.context import Context
from ..core.limits import MAX_ID
from ..jobs import records, states
from ..jobs.fields import MAX_NODES
from ..jobs.models import Job
from .common import Ctx, Id, Member

router = APIRouter(prefix="/jobs", tags=["jobs"])
MAX_RANK = MAX_NODES * 256  # nodes x processes per node


def _visible_state(ctx: Context, person: Person, job_id: int) -> tuple[str, str | None]:
    with ctx.db.session() as s:
        job = records.visible(s, person, job_id)
        return job.state, job.backend_ref


def _state(ctx: Context, job_id: int) -> tuple[str, str | None]:
    with ctx.db.session() as s:
        job = s.get(Job, job_id)
        return job.state, job.backend_ref


@router.get("/{job_id}/logs", response_class=StreamingResponse)
async def logs(
    job_id: Id,
    person: Member,
    ctx: Ctx,
    request: Request,
    rank: int = Query(0, ge=0, le=MAX_RANK),
    follow: bool = Query(False),
    offset: int = Query(0, ge=0, le=MAX_ID),
) -> StreamingResponse:
    """The log of one rank (``?rank=``, default 0) as text; ``?follow=1`` streams (chunked) while the job runs and ends when it ends. Logs are kept after the end."""
    backend = request.app.state.jobs.backend
    state, ref = await run_in_threadpool(_visible_state, ctx, person, job_id)

    async def stream() -> AsyncIterator[bytes]:
        nonlocal state, ref
        pos = offset
        while True:
            chunk = await backend.read_log(ref, rank, pos) if ref else b""
            if chunk:
                pos += len(chunk)
                yield chunk
                continue
            if not follow or state in states.TERMINAL or await request.is_disconnected():
                return
            await asyncio.sleep(0.3)
            new_state, new_ref = await run_in_threadpool(_state, ctx, job_id)
            if new_ref != ref:
                ref, pos = new_ref, 0
            state = new_state
            if state in states.TERMINAL and ref:  # drain what was written before the end
                tail = await backend.read_log(ref, rank, pos)
                if tail:
                    yield tail
                return

    return StreamingResponse(stream(), media_type="text/plain; charset=utf-8")
