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

from sqlalchemy import func, select

from ..core.db import Database
from ..core.fastsql import In, Transaction
from ..core.models import utcnow
from ..vcs import quota
from ..vcs.quantities import Resources
from . import lifecycle, states
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


def admission_request(request: dict[str, Any] | None, spec: dict[str, Any]) -> dict[str, Any]:
    """``{resources, accelerator}`` of a queued job: the stored request (jobs submitted before it
    was stored: computed from the spec; the admission stores it)."""
    return request or request_of(spec_from_dict(spec))


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
    with db.fast(None) as tx:
        rows = tx.run(lifecycle.QUEUED)
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


def _usage(tx: Transaction) -> Usage:
    usage = Usage()
    for vc, user, resources, placed in tx.run(lifecycle.ALLOCATED):
        usage.take(vc, user, resources)
        if placed and placed.get("type"):  # a server's devices (vcs/placement.py): not given to a job
            usage.taken.setdefault(placed["type"], set()).update(placed.get("visible") or [])
    for (devices,) in tx.run(lifecycle.ACTIVE_DEVICES):
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
    with db.fast(["~jobs", *names]) as tx:
        vcs = {name: (quota_, caps) for name, quota_, caps in tx.run(lifecycle.CHUNK_VCS, names=In(names))}
        if not db.is_sqlite:
            for name in sorted(r for r in inventory if quota.is_device(r)):
                tx.run(lifecycle.DEVICE_LOCK, key=zlib.crc32(name.encode()))
        jobs = {j[0]: j for j in tx.run(lifecycle.CHUNK_JOBS, ids=In(w.id for w in chunk))}
        usage = _usage(tx)
        now = utcnow()
        refs: list[str] = []
        admit: list[dict[str, Any]] = []
        for w in chunk:
            job, vc = jobs.get(w.id), vcs.get(w.vc)
            if job is None or vc is None:
                continue  # cancelled meanwhile, or its VC is gone
            if w.vc in blocked:
                head, why = blocked[w.vc]
                reasons[w.id] = f"waiting: behind job {head}: {why}"
                continue
            job_id, user, spec, stored, _reason = job
            request = admission_request(stored, spec)
            resources, accelerator = request["resources"], request["accelerator"]
            limits = quota.VCLimits(name=w.vc, quota=vc[0], user_caps=vc[1])
            why = quota.check_usage(
                resources,
                limits,
                usage.vc.get(w.vc, {}),
                usage.user.get((w.vc, user), {}),
                user,
                inventory,
                usage.cluster,
            )
            if why:
                blocked[w.vc] = (w.id, why)
                reasons[w.id] = f"waiting: {why}"
                continue
            usage.take(w.vc, user, resources)
            devices: dict[str, Any] = {}
            if accelerator:
                visible = usage.devices(accelerator["type"], accelerator["count"], inventory)
                devices = {"type": accelerator["type"], "count": accelerator["count"], "visible": visible}
            refs.append(str(job_id))
            admit.append(
                {
                    "allocation": {
                        "user": user,
                        "vc": w.vc,
                        "profile": "job",
                        "kind": "job",
                        "ref": str(job_id),
                        "resources": resources,
                        "created": now,
                    },
                    "job": {
                        "id": job_id,
                        "devices": devices,
                        "state": states.check_move(states.QUEUED, states.ADMITTED),
                        "admitted": now,
                        "request": request,
                    },
                }
            )
            admitted.append(job_id)
        if admit:
            # A queued job holds no allocation, so a row already naming it is foreign (written by
            # hand or by an older release): it must not make the insert fail for every VC.
            for alloc_id, ref in tx.run(lifecycle.DROP_STALE, refs=In(refs)):
                log.warning("dropped allocation %s: it named queued job %s, which held none", alloc_id, ref)
            for each in admit:
                tx.run(lifecycle.ALLOCATE, **each["allocation"])
                tx.run(lifecycle.ADMIT, **each["job"])
        for job_id, why in reasons.items():
            job = jobs.get(job_id)
            if job is not None and job[4] != why:
                tx.run(lifecycle.SET_REASON, id=job_id, reason=why)


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
    with db.fast("~jobs") as tx:
        for job_id, reason in tx.run(lifecycle.REASONS, ids=In(reasons)):
            if reason != reasons[job_id]:
                tx.run(lifecycle.SET_REASON, id=job_id, reason=reasons[job_id])


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
