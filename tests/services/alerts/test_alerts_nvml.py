"""Accelerator figures through NVML. No GPU here (nor in CI), so NVML is the boundary this machine
cannot provide: a stand-in ``pynvml`` module (the calls alerts/nvml.py makes, answering for two
GPUs) replaces the real one for the GPU path; the absent path uses the real nvidia-ml-py, which
raises without a driver."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest

from yitong_services.alerts.metrics import OperationsCollector, node_name
from yitong_services.alerts.nvml import NVML
from yitong_services.core.db import Database
from yitong_services.jobs.models import Job
from yitong_services.vcs.models import VC


def fake_pynvml(utilization: list[int]) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.nvmlInit = lambda: None  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: len(utilization)  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    m.nvmlDeviceGetUtilizationRates = lambda h: SimpleNamespace(gpu=utilization[h], memory=0)  # type: ignore[attr-defined]
    m.nvmlDeviceGetMemoryInfo = lambda h: SimpleNamespace(used=2**30 * (h + 1), total=80 * 2**30)  # type: ignore[attr-defined]
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"  # type: ignore[attr-defined]
    m.nvmlDeviceGetUUID = lambda h: f"GPU-{h:04d}"  # type: ignore[attr-defined]
    return m


def test_no_gpu_means_absent_figures():
    nvml = NVML()
    assert nvml.gpus() == [] and nvml.available is False
    assert nvml.reason  # e.g. NVMLError_LibraryNotFound: NVML Shared Library Not Found


def _db(tmp_path) -> Database:
    db = Database(f"sqlite:///{tmp_path / 'y.sqlite'}")
    db.upgrade()
    with db.writing() as s:
        s.add(VC(name="vision", quota={"nvidia.com/gpu": 2}, groups=[], profiles=[], user_caps={}))
        s.flush()
        s.add(
            Job(
                name="train",
                vc="vision",
                user="alice",
                state="running",
                backend="local",
                devices={"type": "nvidia.com/gpu", "visible": [1]},
            )
        )
    return db


def test_gpu_figures_and_allocated_but_idle(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([37, 0]))
    db = _db(tmp_path)
    registry = CollectorRegistry()
    registry.register(OperationsCollector(db, {"nvidia.com/gpu": 2}, "local", 600, NVML()))
    lines = set(generate_latest(registry).decode().splitlines())
    db.dispose()
    node = node_name("local")
    assert {
        'yitong_accelerator_metrics_available{source="nvml"} 1.0',
        f'yitong_accelerator_utilization_percent{{index="0",name="NVIDIA H100 80GB HBM3",node="{node}",uuid="GPU-0000"}} 37.0',
        f'yitong_accelerator_utilization_percent{{index="1",name="NVIDIA H100 80GB HBM3",node="{node}",uuid="GPU-0001"}} 0.0',
        f'yitong_accelerator_memory_used_bytes{{index="1",node="{node}",uuid="GPU-0001"}} 2.147483648e+09',
        f'yitong_accelerator_allocated{{index="1",node="{node}",type="nvidia.com/gpu",vc="vision"}} 1.0',
        f'yitong_accelerator_allocated_idle{{index="1",node="{node}",vc="vision"}} 1.0',
        'yitong_jobs{state="running",vc="vision"} 1.0',
        'yitong_vc_queue_length{vc="vision"} 0.0',
    } <= lines
    # GPU 0 is busy but nobody's: not an allocated-idle one
    assert not any(line.startswith("yitong_accelerator_allocated_idle") and 'index="0"' in line for line in lines)
