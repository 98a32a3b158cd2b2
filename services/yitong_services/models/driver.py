"""The endpoint driver: one task per service, beside the job manager (core/app.py starts it).

Every pass, for each endpoint: a replica whose job runs and whose server answers its model's
``ready`` on the replica's socket, as the replica's account (the listener's uid checked), joins the
route; one whose socket is held by another account's process is never routed: its job is
cancelled and the endpoint says why; routed replicas of share 0 leave it once another replica with a share
answers, and are stopped (their jobs cancelled) when their requests in flight are answered;
replicas whose jobs ended leave the endpoint. All state is in the database: a restart carries on
(the in-flight counts start at 0; the drain grace still applies).
"""

from __future__ import annotations

import logging
import shutil
import time
from typing import Any, Protocol

from anyio import to_thread
from sqlalchemy import select

from ..core.db import Database
from ..core.loopback_http import LoopbackError, LoopbackPool, WrongPeer
from ..core.periodic import Periodic
from ..jobs import states as job_states
from . import rollout
from .endpoints import job_states as states_of
from .models import Endpoint

log = logging.getLogger(__name__)
ENDED = job_states.TERMINAL | {"gone"}


class Jobs(Protocol):
    async def cancel(self, job_id: int) -> None: ...


class EndpointDriver(Periodic):
    what = "endpoint driver"

    def __init__(self, db: Database, jobs: Jobs, router: rollout.Router, interval: float) -> None:
        self.db, self.jobs, self.router, self._interval = db, jobs, router, interval
        self._pool = LoopbackPool(timeout=2, max_idle=1)

    @property
    def interval(self) -> float:
        return self._interval

    async def stop(self) -> None:
        await super().stop()
        self._pool.close()

    def _read(self) -> list[tuple[str, list[dict[str, Any]], dict[int, tuple[str, str]]]]:
        with self.db.session() as s:
            return [
                (e.name, list(e.replicas), states_of(s, e.replicas)) for e in s.scalars(select(Endpoint)) if e.replicas
            ]

    async def _ready(self, name: str, replica: dict[str, Any]) -> bool | str:
        """Whether the replica's model answers ``ready`` on its socket; a sentence when the socket
        is held by another account's process (or the replica is of a release before sockets)."""
        if not replica.get("socket"):
            return "it listens on a TCP port (an earlier release), which is not trusted; deploy again"
        try:
            r = await self._pool.request(
                replica["socket"], 0, "GET", f"/v2/models/{name}/ready", peer_uid=int(replica["uid"])
            )
        except WrongPeer as e:
            return f"its socket {e}; no request was sent to it"
        except (LoopbackError, ValueError):
            return False
        return r.status == 200

    async def tick(self) -> None:
        ready: set[int] = set()
        refused: dict[int, str] = {}
        endpoints = await to_thread.run_sync(self._read)
        if not endpoints:
            return
        for name, reps, jobs in endpoints:
            for r in reps:
                waiting = not r.get("routed") and r.get("draining") is None and r["weight"] > 0
                if waiting and not r.get("refused") and jobs.get(r["job"], ("",))[0] == job_states.RUNNING:
                    answer = await self._ready(name, r)
                    if answer is True:
                        ready.add(r["job"])
                    elif isinstance(answer, str):
                        refused[r["job"]] = answer
                        log.error(
                            "endpoint %s: replica v%s (job %s) not routed: %s", name, r["number"], r["job"], answer
                        )
        stop = await to_thread.run_sync(self._apply, ready, refused)
        for job, root in stop:
            await self.jobs.cancel(job)
            shutil.rmtree(root, ignore_errors=True)
        for job in refused:  # kept in the endpoint (it says why), its job stopped
            await self.jobs.cancel(job)

    def _apply(self, ready: set[int], refused: dict[int, str]) -> list[tuple[int, str]]:
        """Route the ready, mark the refused, drain and stop the superseded (under the lock
        deploys take)."""
        stop: list[tuple[int, str]] = []
        now = time.time()
        with self.db.locked("~jobs") as s:
            for e in s.scalars(select(Endpoint)):
                if not e.replicas:
                    continue
                reps = [dict(r) for r in e.replicas]
                jobs = states_of(s, reps)
                for r in reps:
                    if r["job"] in refused:
                        r["refused"] = refused[r["job"]]
                    if r["job"] in ready:
                        r["routed"] = True
                        log.info("endpoint %s: v%s (job %s) joins the route", e.name, r["number"], r["job"])
                ended = {
                    r["job"]
                    for r in reps
                    if (r.get("routed") or r.get("draining") is not None)
                    and jobs.get(r["job"], ("gone",))[0] in ENDED  # a drained one still queued is stopped below
                }
                reps = [r for r in reps if r["job"] not in ended]
                for job in rollout.to_drain(reps):
                    r = next(r for r in reps if r["job"] == job)
                    r["routed"], r["draining"] = False, now
                    log.info("endpoint %s: v%s (job %s) leaves the route and drains", e.name, r["number"], job)
                gone = set(rollout.to_stop(reps, self.router.inflight, now))
                stop += [(r["job"], r["dir"]) for r in reps if r["job"] in gone]
                reps = [r for r in reps if r["job"] not in gone]
                if reps != e.replicas:
                    e.replicas = reps
                    top = rollout.primary(reps)
                    if top is not None:
                        e.version_id = top["version_id"]
                e.state, e.reason = (
                    rollout.state(reps, states_of(s, reps), e.scale or 1) if reps else ("failed", "no replica runs")
                )
        return stop
