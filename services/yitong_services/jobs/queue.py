"""Admission: queued jobs become admitted when ``allocate`` of their resources succeeds.

Order: priority (high first), then per-VC fairness (the n-th queued job of every VC before the
(n+1)-th of any), then submit time. A VC whose next job does not fit blocks its later jobs (no
overtaking within a VC), not other VCs. A waiting job's ``reason`` says which quota blocks it:
``waiting: VC vision: 2 of 2 nvidia.com/gpu in use``. The check and the insert of the
``kind=job`` allocation (ref = job id) happen in one transaction under the VC's lock, exactly
as ``POST /allocations`` does, so jobs and notebooks share the quotas.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from .. import allocations, quota
from ..authz import Person
from ..db import Database
from ..models import VC, Allocation, Job, utcnow
from ..quantities import Resources
from . import states
from .spec import per_job_resources, spec_from_dict


@dataclass(frozen=True)
class Waiting:
    id: int
    vc: str
    priority: int
    created: Any


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
        rows = s.execute(
            select(Job.id, Job.vc, Job.priority, Job.created).where(Job.state == states.QUEUED)
        ).all()
    return fair_order([Waiting(*r) for r in rows])


def _free_devices(session, kind: str, count: int, inventory: Resources) -> list[int]:
    taken: set[int] = set()
    for devices in session.scalars(select(Job.devices).where(Job.state.in_(states.ACTIVE))):
        if devices and devices.get("type") == kind:
            taken.update(devices.get("visible") or [])
    free = [i for i in range(int(inventory.get(kind, 0))) if i not in taken]
    return free[:count]


def try_admit(db: Database, job_id: int, inventory: Resources) -> str | None:
    """Admit one queued job; the refusal (why it waits) otherwise. None also when it is no longer queued."""
    with db.session() as s:
        vc_name = s.scalar(select(Job.vc).where(Job.id == job_id))
    with db.locked(vc_name) as session:
        vc = session.scalar(select(VC).where(VC.name == vc_name).with_for_update())
        job = session.get(Job, job_id)
        if vc is None or job is None or job.state != states.QUEUED:
            return None
        spec = spec_from_dict(job.spec)
        request = per_job_resources(spec)
        if not db.is_sqlite:
            for name in sorted(r for r in request if quota.is_device(r)):
                session.execute(select(func.pg_advisory_xact_lock(zlib.crc32(name.encode()))))
        refused = allocations.reason(session, vc, Person(name=job.user), request, inventory)
        if refused:
            return refused
        session.add(Allocation(user=job.user, vc=vc.name, profile="job", kind="job", ref=str(job.id), resources=request))
        job.devices = {}
        if spec.accelerator:
            visible = _free_devices(session, spec.accelerator.type, spec.accelerator.count, inventory)
            job.devices = {"type": spec.accelerator.type, "count": spec.accelerator.count, "visible": visible}
        job.state = states.check_move(job.state, states.ADMITTED)
        job.admitted = utcnow()
        job.attempts += 1
        job.reason = ""
        job.backend_ref = None
    return None


def admit_pass(db: Database, inventory: Resources) -> list[int]:
    """One pass over the queue; returns the ids admitted and stores each waiting job's reason."""
    admitted: list[int] = []
    blocked: dict[str, tuple[int, str]] = {}
    reasons: dict[int, str] = {}
    for w in queued(db):
        if w.vc in blocked:
            head, why = blocked[w.vc]
            reasons[w.id] = f"waiting: behind job {head}: {why}"
            continue
        why = try_admit(db, w.id, inventory)
        if why is None:
            admitted.append(w.id)
        else:
            blocked[w.vc] = (w.id, why)
            reasons[w.id] = f"waiting: {why}"
    if reasons:
        with db.locked("~jobs") as s:
            for job in s.scalars(select(Job).where(Job.id.in_(list(reasons)), Job.state == states.QUEUED)):
                if job.reason != reasons[job.id]:
                    job.reason = reasons[job.id]
    return admitted


def positions(db: Database) -> dict[int, int]:
    """Queue position (1 = next) of every queued job."""
    return {w.id: n for n, w in enumerate(queued(db), start=1)}
