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

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("%s: tick failed", self.what)
            await asyncio.sleep(self.interval)
