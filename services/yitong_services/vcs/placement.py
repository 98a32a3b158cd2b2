"""Which device indices a notebook server gets on the local backend, recorded in its allocation.

The local backend runs servers on this machine; the platform picks the lowest indices of the
device type that no other server and no active job holds, stores
``{"node", "type", "visible"}`` in the allocation (``Allocation.devices``), and the spawner sets
the type's visible-device variables to them. The accelerator reclaim matches those indices to
the node's per-device use (ops/usage.py). On Slurm and Kubernetes the engine picks the devices
(GRES, device plugin): nothing is recorded, and the reclaim says the use is not measured.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

from sqlalchemy import JSON, column, select, table
from sqlalchemy.orm import Session

from . import quota
from .models import Allocation
from .quantities import Resources

# jobs build on VCs, not the other way round: name their table, not their model (as catalog.py
# does for datasets); the states that hold devices are jobs.states.ACTIVE (tested to agree)
JOBS = table("jobs", column("devices", JSON), column("state"))
ACTIVE_JOBS = ("admitted", "running")


def node_name() -> str:
    """This machine's name, as the dashboard and ``yitong-service node-report`` name it."""
    return socket.gethostname()


def pick(count: int, total: int, taken: Iterable[int]) -> list[int] | None:
    """The lowest ``count`` indices of ``range(total)`` not in ``taken``; None when too few are free."""
    held = set(taken)
    free = [i for i in range(total) if i not in held][:count]
    return free if len(free) == count else None


def taken(session: Session, node: str, kind: str) -> set[int]:
    """Indices of ``kind`` on ``node`` held by servers' allocations and by active jobs."""
    out: set[int] = set()
    for devices in session.scalars(select(Allocation.devices).where(Allocation.devices.is_not(None))):
        if devices and devices.get("node") == node and devices.get("type") == kind:
            out.update(int(i) for i in devices.get("visible") or [])
    for devices in session.scalars(select(JOBS.c.devices).where(JOBS.c.state.in_(ACTIVE_JOBS))):
        if devices and devices.get("type") == kind:
            out.update(int(i) for i in devices.get("visible") or [])
    return out


def place(session: Session, node: str, request: Resources, inventory: Resources) -> dict | None:
    """``{"node", "type", "visible"}`` for the request's accelerator (whole devices only), else None."""
    kinds = [r for r, n in request.items() if quota.is_device(r) and n]
    if len(kinds) != 1:
        return None
    kind = kinds[0]
    count = request[kind]
    if float(count) != int(count):  # a fraction of a shared device: no index of its own
        return None
    visible = pick(int(count), int(inventory.get(kind, 0)), taken(session, node, kind))
    return None if visible is None else {"node": node, "type": kind, "visible": visible}
