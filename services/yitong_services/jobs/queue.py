"""Admission: queued jobs become admitted when their resources fit the VC's quota.

Order: priority (high first), then per-VC fairness (the n-th queued job of every VC before the
(n+1)-th of any), then submit time. A VC whose next job does not fit blocks its later jobs (no
overtaking within a VC), not other VCs. A waiting job's ``reason`` says which quota blocks it:
``waiting: VC vision: 2 of 2 nvidia.com/gpu in use``.

A pass admits in chunks of :data:`CHUNK` jobs. Each chunk is one transaction holding the job
lock and the lock of every VC involved (exactly the locks ``POST /allocations`` takes, so jobs
and notebooks share the quotas): usage is read once, kept as running totals while the chunk's
jobs are checked (``quota.check_usage``), and the ``kind=job`` allocations (ref = job id) and
job rows are written together at the end.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func, insert, select

from ..core.db import Database
from ..core.models import utcnow
from ..vcs import quota
from ..vcs.models import VC, Allocation
from ..vcs.quantities import Resources
from . import states
from .models import Job
from .spec import request_of, spec_from_dict

log = logging.getLogger(__name__)
CHUNK = 1000  # jobs per admission transaction: other writers wait at most one chunk
FRESH = 0.25  # seconds a queue fingerprint is trusted before it is read again


@dataclass(frozen=True)
class Waiting:
    id: int
    vc: str
    priority: int
    created: Any


def admission_request(job: Job) -> tuple[Resources, dict[str, Any] | None]:
    """``(resources, accelerator)`` of a queued job: the stored request (jobs submitted before it
    was stored: computed from the spec, once)."""
    if not job.request:
        job.request = request_of(spec_from_dict(job.spec))
    return job.request["resources"], job.request["accelerator"]


def fair_order(jobs: Sequence[Waiting]) -> list[Waiting]:
    """Priority first, then round-robin over VCs, then submit time (pure)."""
    ranks: dict[int, int] = {}
    seen: dict[tuple[str, int], int] = {}
    for j in sorted(jobs, key=lambda j: (-j.priority, j.created, j.id)):
        key = (j.vc, j.priority)
        ranks[j.id] = seen.get(key, 0)
        seen[key] = ranks[j.id] + 1
    return sorted(jobs, key=lambda j: (-j.priority, ranks[j.id], j.created, j.id))


def queued(db: Database) -> list[Waiting]:
    with db.session() as s:
        rows = s.execute(select(Job.id, Job.vc, Job.priority, Job.created).where(Job.state == states.QUEUED)).all()
    return fair_order([Waiting(*r) for r in rows])


def _add(into: dict[str, float], amounts: Resources) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, 0) + amount


@dataclass
class Usage:
    """Running totals while a chunk is admitted: per VC, per (VC, user), devices cluster-wide."""

    vc: dict[str, dict[str, float]] = field(default_factory=dict)
    user: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    cluster: dict[str, float] = field(default_factory=dict)
    taken: dict[str, set[int]] = field(default_factory=dict)  # device type -> visible indices in use

    def take(self, vc: str, user: str, amounts: Resources) -> None:
        _add(self.vc.setdefault(vc, {}), amounts)
        _add(self.user.setdefault((vc, user), {}), amounts)
        _add(self.cluster, amounts)

    def devices(self, kind: str, count: int, inventory: Resources) -> list[int]:
        taken = self.taken.setdefault(kind, set())
        free = [i for i in range(int(inventory.get(kind, 0))) if i not in taken][:count]
        taken.update(free)
        return free


def _usage(session, inventory: Resources) -> Usage:
    usage = Usage()
    for vc, user, resources, placed in session.execute(
        select(Allocation.vc, Allocation.user, Allocation.resources, Allocation.devices)
    ):
        usage.take(vc, user, resources)
        if placed and placed.get("type"):  # a server's devices (vcs/placement.py): not given to a job
            usage.taken.setdefault(placed["type"], set()).update(placed.get("visible") or [])
    for devices in session.scalars(select(Job.devices).where(Job.state.in_(states.ACTIVE))):
        if devices and devices.get("type"):
            usage.taken.setdefault(devices["type"], set()).update(devices.get("visible") or [])
    return usage


def _admit_chunk(
    db: Database,
    chunk: list[Waiting],
    inventory: Resources,
    blocked: dict[str, tuple[int, str]],
    reasons: dict[int, str],
    admitted: list[int],
) -> None:
    names = sorted({w.vc for w in chunk})
    with db.locked_many(["~jobs", *names]) as s:
        vcs = {v.name: v for v in s.scalars(select(VC).where(VC.name.in_(names)).with_for_update())}
        if not db.is_sqlite:
            for name in sorted(r for r in inventory if quota.is_device(r)):
                s.execute(select(func.pg_advisory_xact_lock(zlib.crc32(name.encode()))))
        ids = [w.id for w in chunk]
        jobs = {
            j.id: j for j in s.scalars(select(Job).where(Job.id.in_(ids), Job.state == states.QUEUED).with_for_update())
        }
        usage = _usage(s, inventory)
        now = utcnow()
        rows: list[dict[str, Any]] = []
        for w in chunk:
            job, vc = jobs.get(w.id), vcs.get(w.vc)
            if job is None or vc is None:
                continue  # cancelled meanwhile, or its VC is gone
            if w.vc in blocked:
                head, why = blocked[w.vc]
                reasons[w.id] = f"waiting: behind job {head}: {why}"
                continue
            request, accelerator = admission_request(job)
            limits = quota.VCLimits(name=vc.name, quota=vc.quota, user_caps=vc.user_caps)
            why = quota.check_usage(
                request,
                limits,
                usage.vc.get(vc.name, {}),
                usage.user.get((vc.name, job.user), {}),
                job.user,
                inventory,
                usage.cluster,
            )
            if why:
                blocked[w.vc] = (w.id, why)
                reasons[w.id] = f"waiting: {why}"
                continue
            usage.take(vc.name, job.user, request)
            rows.append(
                {
                    "user": job.user,
                    "vc": vc.name,
                    "profile": "job",
                    "kind": "job",
                    "ref": str(job.id),
                    "resources": request,
                    "created": now,
                }
            )
            job.devices = {}
            if accelerator:
                visible = usage.devices(accelerator["type"], accelerator["count"], inventory)
                job.devices = {"type": accelerator["type"], "count": accelerator["count"], "visible": visible}
            job.state = states.check_move(job.state, states.ADMITTED)
            job.admitted = now
            job.attempts += 1
            job.reason = ""
            job.backend_ref = None
            admitted.append(job.id)
        if rows:
            # A queued job holds no allocation, so a row already naming it is foreign (written by
            # hand or by an older release): it must not make the insert fail for every VC.
            refs = [r["ref"] for r in rows]
            stale = s.execute(
                delete(Allocation)
                .where(Allocation.kind == "job", Allocation.ref.in_(refs))
                .returning(Allocation.id, Allocation.ref)
            ).all()
            for alloc_id, ref in stale:
                log.warning("dropped allocation %s: it named queued job %s, which held none", alloc_id, ref)
            s.execute(insert(Allocation), rows)
        for job_id, why in reasons.items():
            job = jobs.get(job_id)
            if job is not None and job.reason != why:
                job.reason = why


def admit_pass(db: Database, inventory: Resources) -> list[int]:
    """One pass over the queue; returns the ids admitted and stores each waiting job's reason."""
    admitted: list[int] = []
    blocked: dict[str, tuple[int, str]] = {}
    waiting = queued(db)
    for start in range(0, len(waiting), CHUNK):
        chunk = waiting[start : start + CHUNK]
        if all(w.vc in blocked for w in chunk):
            reasons = {w.id: f"waiting: behind job {blocked[w.vc][0]}: {blocked[w.vc][1]}" for w in chunk}
            _store_reasons(db, reasons)
            continue
        _admit_chunk(db, chunk, inventory, blocked, {}, admitted)
    return admitted


def _store_reasons(db: Database, reasons: dict[int, str]) -> None:
    with db.locked("~jobs") as s:
        for job in s.scalars(select(Job).where(Job.id.in_(list(reasons)), Job.state == states.QUEUED)):
            if job.reason != reasons[job.id]:
                job.reason = reasons[job.id]


def fingerprint(db: Database) -> tuple[Any, ...]:
    """A cheap summary of the queue (one aggregate over the indexed state column): it changes
    whenever a job joins or leaves the queue or a queued job's priority changes."""
    with db.session() as s:
        return tuple(
            s.execute(
                select(func.count(), func.max(Job.id), func.sum(Job.id), func.sum(Job.id * (Job.priority + 7))).where(
                    Job.state == states.QUEUED
                )
            ).one()
        )


class Positions:
    """Queue positions kept between requests: the queue's :func:`fingerprint` is read at most
    every ``fresh`` seconds, and the fair order is computed again only when it changed, not on
    every ``GET /jobs`` (positions move only when jobs are queued, cancelled or admitted, and
    admission runs every ``jobs.poll_interval``, 1 s by default)."""

    def __init__(self, db: Database, fresh: float = FRESH) -> None:
        self.db, self.fresh = db, fresh
        self._key: tuple[Any, ...] | None = None
        self._checked = -1e9
        self._positions: dict[int, int] = {}
        self._lock = threading.Lock()

    def current(self, need: Collection[int] = ()) -> dict[int, int]:
        """Positions, read again when older than ``fresh`` or when a queued job in ``need`` is
        missing (just submitted or retried)."""
        # no lock is held while the database is asked: a caller holding a pooled connection
        # must never wait on a thread that waits for one (two threads may both recompute)
        now = time.monotonic()
        with self._lock:
            if now - self._checked < self.fresh and all(i in self._positions for i in need):
                return self._positions
            self._checked = now
            known_key = self._key
        key = fingerprint(self.db)
        if key == known_key:
            return self._positions
        fresh = {w.id: n for n, w in enumerate(queued(self.db), start=1)}
        with self._lock:
            self._positions, self._key = fresh, key
        return fresh


_cache: weakref.WeakKeyDictionary[Database, Positions] = weakref.WeakKeyDictionary()


def positions(db: Database, need: Collection[int] = ()) -> dict[int, int]:
    """Queue position (1 = next) of every queued job (recomputed only when the queue changed);
    ``need``: ids of jobs the caller knows are queued."""
    cached = _cache.get(db)
    if cached is None:
        cached = _cache.setdefault(db, Positions(db))
    return cached.current(need)
