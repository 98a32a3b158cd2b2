"""Reserve and release resources atomically (the only writer of the ``allocations`` table).

``allocate`` runs its checks and the insert in one transaction under the VC's lock: a process
lock plus ``BEGIN IMMEDIATE`` on SQLite, ``SELECT ... FOR UPDATE`` on the VC row plus a
transaction advisory lock per device type on PostgreSQL (devices are also limited across
VCs by the inventory).
"""

from __future__ import annotations

import logging
import zlib
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..core.authz import Person, member_refusal
from ..core.db import Database
from ..core.errors import Refusal
from . import placement, quota
from .catalog import get_profile
from .models import VC, Allocation
from .quantities import Resources
from .schemas import AllocationIn
from .views import allocation_dict, held, profile_resources

log = logging.getLogger(__name__)


def _existing(session: Session, body: AllocationIn, user: str, exact: bool = False) -> dict | None:
    """The allocation already holding ``(kind, ref)``; 409 when it differs (unless ``exact``)."""
    a = session.scalar(select(Allocation).where(Allocation.kind == body.kind, Allocation.ref == body.ref))
    if a is None:
        return None
    if (a.user, a.vc, a.profile) != (user, body.vc, body.profile):
        if exact:
            return None
        raise Refusal(
            409,
            f"{body.kind} {body.ref} already holds allocation {a.id} ({a.user}, VC {a.vc},"
            f" profile {a.profile}); release it first",
        )
    return allocation_dict(a)


def _device_locks(session: Session, request: Resources) -> None:
    for name in sorted(r for r in request if quota.is_device(r)):
        session.execute(select(func.pg_advisory_xact_lock(zlib.crc32(name.encode()))))


def reason(session: Session, vc: VC, person: Person, request: Resources, inventory: Resources) -> str | None:
    """Why ``request`` does not fit now (None: it fits); reads within the caller's transaction."""
    vc_allocs = session.scalars(select(Allocation).where(Allocation.vc == vc.name)).all()
    cluster: Resources | None = None
    if any(quota.is_device(r) for r in request):
        cluster = quota.total(session.scalars(select(Allocation.resources)))
    limits = quota.VCLimits(name=vc.name, quota=vc.quota, user_caps=vc.user_caps)
    return quota.check(request, limits, held(vc_allocs), person.name, inventory, cluster)


def allocate(
    db: Database, person: Person, body: AllocationIn, inventory: Resources, node: str | None = None
) -> tuple[dict, bool]:
    """``(allocation, created)``; the same ``(kind, ref)`` again returns the existing one.

    ``node``: the local backend's machine: a server's accelerators get device indices there
    (placement.py), recorded in the allocation's ``devices``."""
    if body.kind == "server" and not body.ref.startswith(f"{person.name}/"):
        raise Refusal(422, f"ref of a server must be '{person.name}/<server name>', not {body.ref!r}")
    with db.session() as session:
        found = _existing(session, body, person.name, exact=True)
        if found:
            return found, False
    try:
        with db.locked(body.vc) as session:
            vc = session.scalar(select(VC).where(VC.name == body.vc).with_for_update())
            if vc is None or member_refusal(person, vc.name, vc.groups):
                raise Refusal(404, f"there is no VC {body.vc}")
            profile = get_profile(session, body.profile)
            if profile.name not in vc.profiles:
                raise Refusal(422, f"VC {vc.name} does not offer profile {profile.name}")
            found = _existing(session, body, person.name)
            if found:
                return found, False
            request = profile_resources(profile)
            if not db.is_sqlite:
                _device_locks(session, request)
            refused = reason(session, vc, person, request, inventory)
            if refused:
                raise Refusal(409, refused)
            a = Allocation(
                user=person.name,
                vc=vc.name,
                profile=profile.name,
                kind=body.kind,
                ref=body.ref,
                resources=request,
                devices=placement.place(session, node, request, inventory) if node and body.kind == "server" else None,
            )
            session.add(a)
            session.flush()
            out = allocation_dict(a)
    except IntegrityError:  # the same (kind, ref) inserted concurrently through another VC
        with db.session() as session:
            found = _existing(session, body, person.name)
        if found:
            return found, False
        raise
    log.info("allocated %s: %s %s in VC %s (%s)", out["id"], body.kind, body.ref, body.vc, request)
    return out, True


def release(session: Session, allocation: Allocation) -> None:
    session.delete(allocation)
    log.info("released %s: %s %s in VC %s", allocation.id, allocation.kind, allocation.ref, allocation.vc)


def drop_stale_servers(db: Database, active: set[str], before: datetime) -> list[dict]:
    """Delete ``kind=server`` allocations created before ``before`` whose server is gone."""
    with db.writing() as session:
        rows = session.scalars(select(Allocation).where(Allocation.kind == "server")).all()
        stale = [a for a in rows if a.ref not in active and a.created < before]
        if stale:
            session.execute(delete(Allocation).where(Allocation.id.in_([a.id for a in stale])))
        return [allocation_dict(a) for a in stale]
