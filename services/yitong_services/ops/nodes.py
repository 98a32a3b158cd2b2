"""Nodes as the backends report them: this machine (sampled here) and reported nodes.

Each node's agent (a Slurm or Kubernetes node's ``yitong-service node-report``, or a test)
``POST``s a :class:`~.schemas.NodeReport`; the registry keeps the latest report of at most
``ops.max_nodes`` nodes in memory (a node that stops reporting turns red after
``ops.node_stale`` seconds; a restart forgets reported nodes until they report again).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from typing import Any

from ..vcs.quantities import Resources


class NodeRegistry:
    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self._nodes: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def report(self, report: dict[str, Any], now: float | None = None) -> None:
        entry = dict(report, reported=time.time() if now is None else now)
        with self._lock:
            self._nodes.pop(report["name"], None)
            self._nodes[report["name"]] = entry
            while len(self._nodes) > self.max_nodes:
                self._nodes.popitem(last=False)

    def get(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._nodes.get(name)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._nodes.values())


def local_usage(inventory: Resources) -> dict[str, float | int | None]:
    """What this machine uses now: cpu cores busy (since the last call), memory bytes in use;
    devices ``None`` (measured only where NVML answers)."""
    import psutil  # lazy: only the sampler needs it

    cores = float(inventory.get("cpu") or os.cpu_count() or 1)
    mem = psutil.virtual_memory()
    used: dict[str, float | int | None] = {
        "cpu": round(psutil.cpu_percent(interval=None) / 100.0 * cores, 3),
        "memory": int(mem.total - mem.available),
    }
    devices = [r for r in inventory if r not in ("cpu", "memory")]
    used.update(device_usage(devices))
    return used


def device_usage(devices: list[str]) -> dict[str, float | None]:
    """Accelerators in use by NVML's utilisation (``nvidia.com/gpu``: busy devices, fractional);
    ``None`` where there is no NVML (no driver, no pynvml) or for other device kinds."""
    out: dict[str, float | None] = {d: None for d in devices}
    if "nvidia.com/gpu" not in out:
        return out
    try:
        import pynvml  # type: ignore[import-not-found]  # optional: present where NVIDIA's driver is

        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
            busy = sum(
                pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(i)).gpu / 100.0
                for i in range(count)
            )
            out["nvidia.com/gpu"] = round(busy, 3)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    return out
