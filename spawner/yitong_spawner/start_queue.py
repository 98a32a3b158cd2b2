"""The start queue: at most N servers of one hub start at once; the others wait their turn.

A server start is cheap for the hub and expensive for the machine it lands on (a fresh Python
process importing Jupyter takes seconds of CPU). When fifty people press Start together, starting
all fifty at once makes every one of them slow, and most run past the hub's timeouts. Here a start
takes a slot before `Spawner.start()` is called (the hub runs `pre_spawn_hook` outside its
`start_timeout`, so waiting for a slot never times a spawn out) and gives it back when its server
answers HTTP, fails, or is stopped; those waiting are served first come, first served, and each
can tell its position (shown on the hub's progress page).

One queue per hub process: JupyterHub runs every spawner on one event loop.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    ahead: int  # starts waiting before this one
    starting: int  # starts holding a slot now
    limit: int


class StartQueue:
    def __init__(self, limit: int):
        if limit < 1:
            raise ValueError(f"start queue: the limit must be at least 1, not {limit}")
        self.limit = limit
        self._holding: set[object] = set()
        self._waiting: OrderedDict[object, asyncio.Future[None]] = OrderedDict()

    def position(self, key: object) -> Position | None:
        """Where ``key`` waits, or None when it holds a slot or is not in the queue."""
        if key not in self._waiting:
            return None
        ahead = list(self._waiting).index(key)
        return Position(ahead=ahead, starting=len(self._holding), limit=self.limit)

    def holds(self, key: object) -> bool:
        return key in self._holding

    async def acquire(self, key: object) -> None:
        """Wait for a slot (FIFO). Cancelling the wait leaves the queue as if it never joined."""
        if key in self._holding:
            return
        if not self._waiting and len(self._holding) < self.limit:
            self._holding.add(key)
            return
        waiter = self._waiting.get(key)
        if waiter is None:
            waiter = self._waiting[key] = asyncio.get_running_loop().create_future()
        try:
            await waiter
        except BaseException:
            self._waiting.pop(key, None)
            if waiter.done() and not waiter.cancelled():  # granted just as it was cancelled: pass it on
                self._holding.discard(key)
                self._wake()
            raise

    def release(self, key: object) -> None:
        """Give the slot back (idempotent) and let the next in line start."""
        if key in self._holding:
            self._holding.discard(key)
            self._wake()

    def _wake(self) -> None:
        while self._waiting and len(self._holding) < self.limit:
            key, waiter = self._waiting.popitem(last=False)
            if waiter.done():
                continue
            self._holding.add(key)
            waiter.set_result(None)


def default_limit(backend: str, cpus: int | None = None) -> int:
    """Local servers start on this machine: 8 per core. A start costs about 1.5 s of CPU, so 16
    at once on 2 cores each answer within ~12 s, far inside the 60 s HTTP timeout, while the CPU
    stays busy (measured: one start per core left it idle between starts and doubled a 20-user
    storm's time). Slurm and Kubernetes start servers on other nodes, where the engine queues:
    there the limit only bounds the hub's own work."""
    if backend == "local":
        return 8 * max(1, cpus if cpus is not None else (os.cpu_count() or 1))
    return 32


_queues: dict[int, StartQueue] = {}


def shared_queue(limit: int) -> StartQueue:
    """The hub process's queue for ``limit`` (one per distinct limit, normally one)."""
    queue = _queues.get(limit)
    if queue is None:
        queue = _queues[limit] = StartQueue(limit)
    return queue


def describe(pos: Position) -> str:
    ahead = "you are next" if pos.ahead == 0 else f"{pos.ahead} ahead of you"
    return f"Waiting to start: {ahead}; {pos.starting} of {pos.limit} starting at a time on this hub"
