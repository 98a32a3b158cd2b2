"""Per-device accelerator use: NVML read per device (NVML replaced at its boundary by
tests/fake_nvml/pynvml.py: no GPU on this machine), the agent's report, the service's storage
of it, and a server's allocated indices matched to it (ops/usage.py)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from yitong_services.ops.usage import freshest, measure

FAKE = Path(__file__).resolve().parents[2] / "fake_nvml"
NOW = 1_800_000_000.0
PLACED = {"node": "gpu-1", "type": "nvidia.com/gpu", "visible": [1, 2]}


def dev(index: int, util: float, processes=()) -> dict:
    return {"type": "nvidia.com/gpu", "index": index, "utilization": util, "processes": list(processes)}


def report(devices, age=5.0, note="") -> dict:
    return {"devices": devices, "devices_note": note, "reported": NOW - age}


@pytest.mark.parametrize(
    "placed,node_report,expected",
    [
        # the busiest of the server's own devices counts; device 0 (someone else's) does not
        (
            PLACED,
            report([dev(0, 0.9), dev(1, 0.0), dev(2, 0.3, [{"pid": 7, "memory": 1}])]),
            (0.3, "GPU 1 0%, GPU 2 30% (1 processes) on gpu-1, 5 s ago"),
        ),
        (PLACED, report([dev(0, 0.9), dev(1, 0.0), dev(2, 0.0)]), (0.0, "GPU 1 0%, GPU 2 0% on gpu-1, 5 s ago")),
        # absent, never zero: each reason says why
        (
            None,
            report([dev(0, 0.0)]),
            (None, "the platform does not know which devices it holds (placed by the engine)"),
        ),
        (PLACED, None, (None, "node gpu-1 has not reported its devices (run yitong-service node-report there)")),
        (PLACED, report([dev(1, 0.0), dev(2, 0.0)], age=500), (None, "node gpu-1's latest report is 500 s old")),
        (
            PLACED,
            report(None, note="no NVML on this node (NVMLError: Driver Not Loaded)"),
            (None, "no NVML on this node (NVMLError: Driver Not Loaded)"),
        ),
        (PLACED, report([dev(1, 0.0)]), (None, "node gpu-1 reported no device 2")),
        (
            {"node": "n", "type": "huawei.com/Ascend910", "visible": [0]},
            report([dev(0, 0.0)]),
            (None, "huawei.com/Ascend910 use is not measured (NVML measures nvidia.com/gpu)"),
        ),
    ],
)
def test_measure(placed, node_report, expected):
    assert measure(placed, node_report, NOW, stale=120) == expected


def test_freshest_prefers_a_measured_report():
    unmeasured = report(None, age=1, note="no NVML")
    measured = report([dev(0, 0.1)], age=30)
    assert freshest([unmeasured, measured, None]) is measured
    assert freshest([unmeasured, None]) is unmeasured
    assert freshest([None]) is None


@pytest.fixture
def fake_pynvml(tmp_path, monkeypatch):
    """The stand-in ``pynvml`` imported in this process (the real one raises without a GPU)."""
    spec = tmp_path / "nvml.json"
    monkeypatch.setenv("YT_FAKE_NVML", str(spec))
    monkeypatch.syspath_prepend(str(FAKE))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    importlib.import_module("pynvml")
    yield spec
    sys.modules.pop("pynvml", None)


def test_agent_report_carries_per_device_use(fake_pynvml):
    from yitong_services.alerts.nvml import NVML
    from yitong_services.ops.agent import build_report
    from yitong_services.ops.schemas import NodeReport

    fake_pynvml.write_text(json.dumps([{"util": 0}, {"util": 75, "memory_used": 2**30, "processes": [[4242, 2**30]]}]))
    out = build_report("gpu-1", "agent", {"cpu": 4.0, "nvidia.com/gpu": 2}, {}, 1.0, NVML())
    assert out["devices"] == [
        {
            "type": "nvidia.com/gpu",
            "index": 0,
            "uuid": "GPU-fake-0",
            "utilization": 0.0,
            "memory_used": 0,
            "memory_total": 16 * 2**30,
            "processes": [],
        },
        {
            "type": "nvidia.com/gpu",
            "index": 1,
            "uuid": "GPU-fake-1",
            "utilization": 0.75,
            "memory_used": 2**30,
            "memory_total": 16 * 2**30,
            "processes": [{"pid": 4242, "memory": 2**30}],
        },
    ]
    assert out["used"]["nvidia.com/gpu"] == 0.75 and out["devices_note"] == ""
    NodeReport.model_validate(out)  # what the service accepts


def test_agent_without_nvml_says_so_never_zero(tmp_path, monkeypatch):
    """No driver: NVML raises at init; the report has no device figures and says why."""
    from yitong_services.alerts.nvml import NVML
    from yitong_services.ops.agent import build_report

    monkeypatch.setenv("YT_FAKE_NVML", str(tmp_path / "absent.json"))
    monkeypatch.syspath_prepend(str(FAKE))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    try:
        out = build_report("gpu-1", "agent", {"cpu": 4.0, "nvidia.com/gpu": 2}, {}, 1.0, NVML())
    finally:
        sys.modules.pop("pynvml", None)
    assert out["devices"] is None and "nvidia.com/gpu" not in out["used"]
    assert out["devices_note"].startswith("no NVML on this node (NVMLError: Driver Not Loaded")


async def test_report_is_stored_per_node_and_bounded(service):
    body = {"name": "gpu-1", "allocatable": {"nvidia.com/gpu": 2}, "devices": [dev(0, 0.5), dev(1, 0.0)]}
    assert (await service.call("admin", "POST", "nodes/report", json=body)).status_code == 204
    stored = service.app.state.monitor.devices_of("gpu-1")
    assert [d["utilization"] for d in stored["devices"]] == [0.5, 0.0]
    too_busy = {**body, "devices": [dev(0, 1.5)]}
    assert (await service.call("admin", "POST", "nodes/report", json=too_busy)).status_code == 422
    assert (await service.call("alice", "POST", "nodes/report", json=body)).status_code == 403
