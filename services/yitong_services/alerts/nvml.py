"""Accelerator figures through NVML (``nvidia-ml-py``), guarded: without a GPU or its driver NVML
raises, and the figures are absent (``yitong_accelerator_metrics_available{source="nvml"} 0``)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GPU:
    index: int
    uuid: str
    name: str
    utilization: float  # percent of the last sample period the GPU was busy
    memory_used: int
    memory_total: int
    processes: tuple[tuple[int, int | None], ...] = ()  # (pid, bytes of device memory or None), compute processes


def _processes(nvml: Any, handle: Any) -> tuple[tuple[int, int | None], ...]:
    """The device's compute processes; empty where NVML does not tell (not supported, no rights)."""
    try:
        found = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:
        return ()
    out = []
    for p in found:
        memory = getattr(p, "usedGpuMemory", None)
        out.append((int(p.pid), int(memory) if isinstance(memory, int) else None))
    return tuple(out)


class NVML:
    """Initialised once, on first use; ``available`` False when NVML cannot start (no library,
    no driver, no GPU), and then every read is an empty list without trying again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nvml: Any = None
        self._tried = False
        self.reason = ""

    def _start(self) -> Any:
        with self._lock:
            if not self._tried:
                self._tried = True
                try:
                    import pynvml

                    pynvml.nvmlInit()
                    self._nvml = pynvml
                except Exception as e:  # ImportError, NVMLError_LibraryNotFound, _DriverNotLoaded, ...
                    self.reason = f"{type(e).__name__}: {e}"
                    log.info("no accelerator figures from NVML (%s)", self.reason)
            return self._nvml

    @property
    def available(self) -> bool:
        return self._start() is not None

    def gpus(self) -> list[GPU]:
        nvml = self._start()
        if nvml is None:
            return []
        out = []
        try:
            for i in range(nvml.nvmlDeviceGetCount()):
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                util = nvml.nvmlDeviceGetUtilizationRates(h)
                mem = nvml.nvmlDeviceGetMemoryInfo(h)
                name = nvml.nvmlDeviceGetName(h)
                uuid = nvml.nvmlDeviceGetUUID(h)
                out.append(
                    GPU(
                        index=i,
                        uuid=uuid.decode() if isinstance(uuid, bytes) else str(uuid),
                        name=name.decode() if isinstance(name, bytes) else str(name),
                        utilization=float(util.gpu),
                        memory_used=int(mem.used),
                        memory_total=int(mem.total),
                        processes=_processes(nvml, h),
                    )
                )
        except Exception as e:  # a GPU fallen off the bus: report what was read
            log.warning("NVML read failed: %s", e)
        return out
