"""A task that runs ``tick`` every ``interval`` seconds beside the service (the operations monitor,
the accelerator reclaim): started and stopped with the service, a failed tick logged and retried."""

from __future__ import annotations

import asyncio
import contextlib
import logging

log = logging.getLogger(__name__)


class Periodic:
    what = "periodic task"  # named in the log when a tick fails
    _task: asyncio.Task | None = None
    _current: asyncio.Future | None = None  # the tick in flight
    #: seconds :meth:`stop` lets a tick in flight finish (0: it is cancelled at once). A tick
    #: whose work is in a worker thread sets it: the thread cannot be cancelled, and left running
    #: it would use the database after the service (or a test) moved on
    stop_grace = 0.0

    @property
    def interval(self) -> float:
        raise NotImplementedError

    async def tick(self) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        current = self._current
        if current is None or current.done():
            return
        if self.stop_grace > 0:
            try:
                await asyncio.wait_for(asyncio.shield(current), self.stop_grace)
                return
            except TimeoutError:
                log.warning("%s: its tick did not end within %g s of the stop", self.what, self.stop_grace)
            except (Exception, asyncio.CancelledError):
                return  # the tick's own failure, while the service stops
        current.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await current

    async def _loop(self) -> None:
        while True:
            self._current = asyncio.ensure_future(self.tick())
            try:
                await asyncio.shield(self._current)  # a stop lets it finish (see stop)
            except Exception:
                log.exception("%s: tick failed", self.what)
            await asyncio.sleep(self.interval)
