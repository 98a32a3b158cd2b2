"""A stand-in for ``pynvml`` (nvidia-ml-py): there is no GPU on the test machines, so NVML is
replaced at its boundary. Put this folder first on ``sys.path`` (``PYTHONPATH``) of the process
under test; it reads the devices from the JSON file named by ``$YT_FAKE_NVML`` on every call:
``[{"util": 40, "memory_used": 1073741824, "memory_total": 17179869184, "processes": [[pid, bytes]]}]``
(a missing file: NVML's "driver not loaded").
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace


class NVMLError(Exception):
    pass


def _devices() -> list[dict]:
    try:
        with open(os.environ["YT_FAKE_NVML"]) as f:
            return json.load(f)
    except (KeyError, OSError) as e:
        raise NVMLError(f"Driver Not Loaded ({e})") from None


def nvmlInit() -> None:
    _devices()


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return len(_devices())


def nvmlDeviceGetHandleByIndex(i: int) -> int:
    return i


def nvmlDeviceGetUtilizationRates(h: int) -> SimpleNamespace:
    return SimpleNamespace(gpu=_devices()[h].get("util", 0), memory=0)


def nvmlDeviceGetMemoryInfo(h: int) -> SimpleNamespace:
    d = _devices()[h]
    used, total = d.get("memory_used", 0), d.get("memory_total", 16 * 2**30)
    return SimpleNamespace(used=used, total=total, free=total - used)


def nvmlDeviceGetName(h: int) -> bytes:
    return b"Fake GPU"


def nvmlDeviceGetUUID(h: int) -> str:
    return f"GPU-fake-{h}"


def nvmlDeviceGetComputeRunningProcesses(h: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in _devices()[h].get("processes", [])]
