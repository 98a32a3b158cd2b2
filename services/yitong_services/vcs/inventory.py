"""What the backend offers: the capacity that devices are checked against.

local: this machine's CPUs and memory (detected) with ``backends.local.inventory`` on top
(e.g. a fake ``nvidia.com/gpu: 1`` for tests); kubernetes and slurm: their ``inventory``
from the settings file (later: asked from the cluster).
"""

from __future__ import annotations

import os

from ..core.settings import Settings
from .quantities import Resources


def detect_local() -> Resources:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        memory = 0
    return {"cpu": float(cpus), "memory": int(memory)}


def inventory(settings: Settings) -> Resources:
    configured = settings.backend_inventory()
    if settings.backend == "local":
        return detect_local() | configured
    return configured
