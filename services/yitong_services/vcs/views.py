"""ORM rows -> API dicts, with usage computed by the pure functions in ``quota``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import quota
from . import storage as vcstorage
from .models import VC, Allocation, Profile
from .quantities import Resources


def held(allocations: Iterable[Allocation]) -> list[quota.Held]:
    return [quota.Held(user=a.user, resources=a.resources) for a in allocations]


def allocations_by_vc(session: Session) -> dict[str, list[Allocation]]:
    out: dict[str, list[Allocation]] = {}
    for a in session.scalars(select(Allocation).order_by(Allocation.id)):
        out.setdefault(a.vc, []).append(a)
    return out


@dataclass(frozen=True)
class Cluster:
    """What the cluster has (the backend's inventory) and what every VC holds of it."""

    inventory: Resources
    used: Resources


def cluster(session: Session, inventory: Resources) -> Cluster:
    return Cluster(inventory, quota.total(session.scalars(select(Allocation.resources))))


def vc_dict(vc: VC, allocations: Iterable[Allocation], storage: dict[str, Any] | None, where: Cluster) -> dict:
    """``storage``: the VC's ``StorageUse`` (vcs/storage.py ``uses``); None: nothing counted.
    ``free``: :func:`quota.vc_free`, devices capped by what ``where`` has unused."""
    used = quota.used(vc.quota, held(allocations))
    return {
        "name": vc.name,
        "description": vc.description,
        "quota": vc.quota,
        "groups": vc.groups,
        "profiles": vc.profiles,
        "user_caps": vc.user_caps,
        "idle_timeout": vc.idle_timeout,
        "storage_quota": vc.storage_quota,
        "used": used,
        "free": quota.vc_free(vc.quota, used, where.inventory, where.used),
        "storage": storage or vcstorage.use(vc.storage_quota, 0, 0, None),
    }


def profile_dict(p: Profile) -> dict:
    return {
        "name": p.name,
        "display_name": p.display_name,
        "description": p.description,
        "image": p.image,
        "kernel": p.kernel,
        "cpu": p.cpu,
        "memory": p.memory,
        "accelerator": p.accelerator,
        "arch": p.arch,
    }


def profile_resources(p: Profile) -> dict[str, float | int]:
    """What one server of this profile takes: ``{"cpu": 1.0, "memory": ..., "nvidia.com/gpu": 1}``."""
    out: dict[str, float | int] = {"cpu": float(p.cpu), "memory": int(p.memory)}
    if p.accelerator:
        out[p.accelerator["type"]] = int(p.accelerator["count"])
    return out


def allocation_dict(a: Allocation) -> dict:
    return {
        "id": a.id,
        "user": a.user,
        "vc": a.vc,
        "profile": a.profile,
        "kind": a.kind,
        "ref": a.ref,
        "resources": a.resources,
        "devices": a.devices,
        "created": a.created,
    }


def usage(session: Session, backend: str, inventory: dict) -> dict:
    by_vc = allocations_by_vc(session)
    vcs = []
    rows = list(session.scalars(select(VC).order_by(VC.name)))
    stored = vcstorage.uses(session, rows)
    where = Cluster(inventory, quota.total(a.resources for group in by_vc.values() for a in group))
    for vc in rows:
        d = vc_dict(vc, by_vc.get(vc.name, []), stored[vc.name], where)
        keep = ("name", "quota", "used", "free", "storage")
        vcs.append({k: d[k] for k in keep} | {"allocations": len(by_vc.get(vc.name, []))})
    return {"backend": backend, "inventory": inventory, "used": where.used, "vcs": vcs}
