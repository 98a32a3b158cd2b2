"""Per-device accelerator use, and a server's share of it.

A node's agent (``yitong-service node-report``) and, for its own machine, the platform service
read each GPU through NVML (alerts/nvml.py): utilisation (the fraction of the last sample
period it was busy), memory, and the compute processes on it. Without NVML (no driver, no GPU,
no ``nvidia-ml-py``) the figures are absent (``devices: null`` with the reason), never zero.

:func:`measure` matches a server's device indices (its allocation's ``devices``,
vcs/placement.py) to the latest per-device report of its node: the accelerator reclaim's
measurement (ops/reclaim.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..alerts.nvml import NVML

GPU = "nvidia.com/gpu"  # the type NVML measures


def read_devices(nvml: NVML) -> tuple[list[dict[str, Any]] | None, str]:
    """``(devices, "")`` as ``NodeReport.devices``, or ``(None, why)`` where NVML does not answer."""
    if not nvml.available:
        return None, f"no NVML on this node ({nvml.reason or 'not available'})"
    return [
        {
            "type": GPU,
            "index": g.index,
            "uuid": g.uuid,
            "utilization": round(g.utilization / 100.0, 4),
            "memory_used": g.memory_used,
            "memory_total": g.memory_total,
            "processes": [{"pid": pid, "memory": memory} for pid, memory in g.processes[:256]],
        }
        for g in nvml.gpus()
    ], ""


def freshest(reports: Iterable[Mapping[str, Any] | None]) -> Mapping[str, Any] | None:
    """Of several reports of one node (its agent's, the service's own sample), the newest that
    measured devices, else the newest."""
    found = [r for r in reports if r]
    measured = [r for r in found if r.get("devices") is not None]
    pool = measured or found
    return max(pool, key=lambda r: r.get("reported") or 0) if pool else None


def measure(
    placed: Mapping[str, Any] | None, report: Mapping[str, Any] | None, now: float, stale: float
) -> tuple[float | None, str]:
    """``(busy, detail)``: the busiest of the server's devices (0..1) with what was read, or
    ``(None, why not measured)``. Pure: ``placed`` is ``Allocation.devices``, ``report`` the
    node's latest report (``devices``, ``devices_note``, ``reported``)."""
    if not placed or not placed.get("visible"):
        return None, "the platform does not know which devices it holds (placed by the engine)"
    node, kind = placed.get("node", "?"), placed.get("type", "?")
    if kind != GPU:
        return None, f"{kind} use is not measured (NVML measures {GPU})"
    if not report:
        return None, f"node {node} has not reported its devices (run yitong-service node-report there)"
    age = now - float(report.get("reported") or 0)
    if age > stale:
        return None, f"node {node}'s latest report is {round(age)} s old"
    devices = report.get("devices")
    if devices is None:
        return None, report.get("devices_note") or f"node {node} has no device figures"
    by_index = {d.get("index"): d for d in devices if d.get("type", GPU) == kind}
    missing = [i for i in placed["visible"] if i not in by_index]
    if missing:
        return None, f"node {node} reported no device {', '.join(map(str, missing))}"
    mine = [by_index[i] for i in placed["visible"]]
    busy = max(float(d.get("utilization") or 0.0) for d in mine)
    shown = ", ".join(
        f"GPU {d['index']} {round(float(d.get('utilization') or 0) * 100)}%"
        + (f" ({len(d.get('processes') or [])} processes)" if d.get("processes") else "")
        for d in mine
    )
    return busy, f"{shown} on {node}, {round(age)} s ago"
