"""At start: account for every admitted or running job (no lost jobs, none started twice).

- running with a ref: left to the watch loop, which polls it: alive (same pid *and* /proc start
  time) is watched again, an exit record is read, a vanished process fails the job with the reason;
- admitted without a ref (the service died while starting it): the backend adopts the attempt
  if it was started (``adopt`` finds its pid file or process), else the loop starts it now;
  an engine that cannot be asked (``SubmissionUnknown``) leaves it for the loop to look for again.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from anyio import to_thread
from sqlalchemy import select

from ..core.db import Database
from . import states
from .backend import Backend, Polled, SubmissionUnknown
from .models import Job

log = logging.getLogger(__name__)


class Reconciled(Protocol):
    """What reconciliation needs of the job manager (no import of the manager: it imports us)."""

    db: Database
    backend: Backend

    def adopted(self, job_id: int, ref: str) -> None:
        """Record a running attempt found again after a restart (state, hosts, ledger record)."""

    def finish(self, job_id: int, polled: Polled) -> Any:
        """Record an attempt's end."""

    async def submission_unknown(self, job_id: int, attempt: int, why: str) -> None:
        """Keep an attempt the engine cannot say anything about, to look for it again."""


async def reconcile_jobs(manager: Reconciled) -> dict[str, int]:
    def active() -> list[tuple[int, str, str | None, int]]:
        with manager.db.session() as s:
            query = select(Job.id, Job.state, Job.backend_ref, Job.attempts).where(
                Job.state.in_(states.ACTIVE), Job.backend == manager.backend.name
            )
            return list(s.execute(query))

    counts = {"watched": 0, "adopted": 0, "relaunch": 0, "unknown": 0, "ended": 0}
    for job_id, _state, ref, attempt in await to_thread.run_sync(active):
        if ref is None:
            try:
                ref = await manager.backend.adopt(job_id, attempt)
            except SubmissionUnknown as e:  # the engine cannot say: looked for again, never started anew now
                await manager.submission_unknown(job_id, attempt, str(e))
                counts["unknown"] += 1
                continue
            if ref is None:
                counts["relaunch"] += 1
                continue
            await to_thread.run_sync(manager.adopted, job_id, ref)
            counts["adopted"] += 1
        polled = await manager.backend.poll(ref)
        if polled.state == "running":
            counts["watched"] += 1
            continue
        if polled.state == "vanished":
            polled.reason = f"{polled.reason} while the platform service was down"
        await to_thread.run_sync(manager.finish, job_id, polled)
        counts["ended"] += 1
    if any(counts.values()):
        log.info("jobs reconciled: %s", counts)
    return counts
