"""Answers of hot read routes kept until this process next commits a write.

Panels, ``yt job ls`` loops and scripts poll ``GET /jobs`` and ``GET /jobs/{id}``; between two
writes they all get the same answer. :class:`Writes` counts the transactions this process has
committed that wrote something (a statement other than a read marks the pooled connection; its
``commit`` bumps the count, and so does the pool's ``checkin`` after the commit), so a cached
answer is served only while no write has been committed since it was read, and never for longer
than ``ttl`` seconds (bounding what a write by another process, a write through a raw DB-API
cursor, or state held outside the database, can leave stale). Transactions that only read, like
the admission pass over a queue that cannot move, invalidate nothing. Concurrent misses of one key
share one computation (one thread-pool hop, one database read for a hundred pollers).

Read-your-writes holds within the process: a route's write transaction is committed and its
connection returned to the pool before its answer is sent, so any read after it misses.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from fastapi.concurrency import run_in_threadpool
from sqlalchemy import Engine, event

MARK = "yitong_wrote"
#: statements that change nothing; anything else (DML, DDL) marks its transaction as a write
READS = ("SELECT", "BEGIN", "PRAGMA", "SAVEPOINT", "RELEASE", "ROLLBACK", "SHOW", "SET", "EXPLAIN", "WITH RECURSIVE")


class Writes:
    """A count that changes whenever this process commits a database transaction."""

    def __init__(self, engine: Engine) -> None:
        self._lock = threading.Lock()
        self.value = 0
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._committing)
        event.listen(engine, "rollback", self._rolled_back)
        event.listen(engine.pool, "checkin", self._checkin)

    def bump(self) -> None:
        with self._lock:
            self.value += 1

    def _statement(self, conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if not statement.lstrip()[:14].upper().startswith(READS):
            conn.info[MARK] = True

    def _committing(self, conn: Any) -> None:
        if conn.info.get(MARK):
            self.bump()  # readers that start now may still see the old rows: the checkin bumps again

    def _rolled_back(self, conn: Any) -> None:
        conn.info.pop(MARK, None)

    def _checkin(self, _dbapi_conn: Any, record: Any) -> None:
        if record is not None and record.info.pop(MARK, False):
            self.bump()  # committed and back in the pool: every read from now on sees the write


class ReadCache:
    """Values of pure read functions by key, valid while :class:`Writes` has not moved."""

    def __init__(self, writes: Writes, ttl: float = 1.0, size: int = 1024) -> None:
        self.writes = writes
        self.ttl = ttl
        self.size = size
        self._entries: OrderedDict[Hashable, tuple[int, float, Any]] = OrderedDict()
        self._pending: dict[tuple[Hashable, int], asyncio.Future[Any]] = {}

    def get(self, key: Hashable) -> tuple[bool, Any]:
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        generation, at, value = entry
        if generation != self.writes.value or time.monotonic() - at > self.ttl:
            return False, None
        return True, value

    def put(self, key: Hashable, generation: int, at: float, value: Any) -> None:
        if generation != self.writes.value:
            return  # a write landed while it was read: do not keep it
        self._entries[key] = (generation, at, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    async def read(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the thread pool, or its kept value. The caller must not change it.
        ``fn`` must be a pure read whose answer is decided by ``key`` and the database."""
        hit, value = self.get(key)
        if hit:
            return value
        generation, at = self.writes.value, time.monotonic()
        pending = self._pending.get((key, generation))
        if pending is not None:
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this request was cancelled
                # the request computing it went away: compute it here
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[(key, generation)] = future
        try:
            value = await run_in_threadpool(fn, *args)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            self._pending.pop((key, generation), None)
        future.set_result(value)
        self.put(key, generation, at, value)
        return value
