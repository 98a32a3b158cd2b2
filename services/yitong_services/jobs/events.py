"""Job and queue changes pushed to watchers (``GET /jobs/events``, server-sent events).

One :class:`JobFeed` per service scans the jobs table every ``interval`` seconds while anyone
watches (one query for all watchers, however many), compares each unfinished job's state, reason,
attempts and queue position with the last scan, and hands every change to the watchers that may
see its VC. A watcher's queue is bounded: one that falls behind gets a ``resync`` event (GET
``/jobs`` again) instead of an ever-growing backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from anyio import to_thread
from sqlalchemy import func, or_, select

from ..core.db import Database
from . import states
from .models import Job
from .queue import positions

log = logging.getLogger(__name__)
BACKLOG = 1000  # events a watcher may fall behind before it is told to resync
HEARTBEAT = 15.0  # seconds between comments on a quiet stream (proxies close silent ones)
Snapshot = dict[int, tuple[str, str, str, str, int, int | None]]


def scan(db: Database, known: Snapshot, newer_than: int = 0) -> Snapshot:
    """``id -> (vc, user, state, reason, attempts, position)`` of every unfinished job, plus the
    jobs of ``known`` (so their move to a final state is seen once) and every job above id
    ``newer_than`` (one that was submitted and ended between two scans is still seen once)."""
    with db.session() as s:
        where = or_(Job.state.not_in(states.TERMINAL), Job.id.in_(list(known)), Job.id > newer_than)
        rows = s.execute(select(Job.id, Job.vc, Job.user, Job.state, Job.reason, Job.attempts).where(where)).all()
    waiting = [r[0] for r in rows if r[3] == states.QUEUED]
    pos = positions(db, waiting) if waiting else {}
    return {r[0]: (r[1], r[2], r[3], r[4], r[5], pos.get(r[0])) for r in rows}


def newest(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.max(Job.id))) or 0


def changes(before: Snapshot, after: Snapshot) -> list[dict[str, Any]]:
    """One ``job`` event per job whose state, reason, attempts or position differ (pure)."""
    out = []
    for job_id, now in after.items():
        if before.get(job_id) != now:
            vc, user, state, reason, attempts, position = now
            out.append(
                {
                    "id": job_id,
                    "vc": vc,
                    "user": user,
                    "state": state,
                    "reason": reason,
                    "attempts": attempts,
                    "position": position,
                }
            )
    return out


@dataclass(eq=False)
class Watcher:
    vcs: frozenset[str] | None  # None: every VC (admins)
    queue: asyncio.Queue[dict[str, Any]] = field(default_factory=lambda: asyncio.Queue(BACKLOG))
    lost: bool = False

    def offer(self, event: dict[str, Any]) -> None:
        if self.vcs is not None and event["vc"] not in self.vcs:
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.lost = True


class JobFeed:
    def __init__(self, db: Database, interval: float = 0.5) -> None:
        self.db, self.interval = db, interval
        self.watchers: set[Watcher] = set()
        self._task: asyncio.Task[None] | None = None
        self._snapshot: Snapshot = {}
        self._newest = 0  # the highest job id seen

    @contextlib.asynccontextmanager
    async def watch(self, vcs: frozenset[str] | None) -> AsyncIterator[Watcher]:
        watcher = Watcher(vcs)
        self.watchers.add(watcher)
        if self._task is None or self._task.done():
            self._newest = await to_thread.run_sync(newest, self.db)
            self._snapshot = await to_thread.run_sync(scan, self.db, {}, self._newest)
            self._task = asyncio.create_task(self._run())
        try:
            yield watcher
        finally:
            self.watchers.discard(watcher)

    async def _run(self) -> None:
        while self.watchers:
            await asyncio.sleep(self.interval)
            try:
                after = await to_thread.run_sync(scan, self.db, self._snapshot, self._newest)
            except Exception:  # a failed scan (database busy, gone) is tried again next tick
                log.exception("scanning jobs for events failed")
                continue
            events = changes(self._snapshot, after)
            self._newest = max([self._newest, *after])
            # finished jobs were reported once; stop tracking them
            self._snapshot = {k: v for k, v in after.items() if v[2] not in states.TERMINAL}
            for event in events:
                for watcher in list(self.watchers):
                    watcher.offer(event)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def sse(event: str, data: Any) -> bytes:
    """One server-sent event (``data`` as one line of JSON, so no user value can end it early)."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def stream(
    feed: JobFeed, vcs: frozenset[str] | None, job_id: int | None = None, seconds: float = 300.0
) -> AsyncIterator[bytes]:
    """The event stream of one watcher for ``seconds``: ``ready`` once watching, then ``job``
    events (only job ``job_id`` when given), ``resync`` when it fell behind, comments as
    heartbeats. It ends after ``seconds`` (a client reconnects, as EventSource does)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    async with feed.watch(vcs) as watcher:
        yield sse("ready", {"retry_ms": 2000})
        while (left := deadline - loop.time()) > 0:
            if watcher.lost:
                watcher.lost = False
                while not watcher.queue.empty():
                    watcher.queue.get_nowait()
                yield sse("resync", {"detail": "events were dropped: GET /jobs again"})
            try:
                event = await asyncio.wait_for(watcher.queue.get(), min(HEARTBEAT, left))
            except TimeoutError:
                if deadline - loop.time() > 0:
                    yield b": heartbeat\n\n"
                continue
            if job_id is None or event["id"] == job_id:
                yield sse("job", event)
