"""Accelerator reclaim end to end with the default policy (``require_measurement: true``): a
real hub, platform service, local spawner and JupyterLab server, and the real node agent
(``yitong-service node-report``) posting per-device use to ``POST /nodes/report``.

There is no GPU on the test machines, so NVML is replaced at its boundary: the agent process
(only it) imports tests/fake_nvml/pynvml.py, which reads each device's utilisation from a JSON
file the test writes. The service's own NVML finds no driver, as on any machine without one.

- no measurement: the idle GPU server is kept, and the decision says why;
- its device measured busy: kept; a busy kernel: kept whatever the device says;
- measured idle with idle kernels: warned (the server's own ``yitong/api/reclaim/warnings``
  lists it, as the JupyterLab notification reads it), then stopped and its GPU given back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from e2e.conftest import PASSWORDS, SETTINGS
from e2e.test_console import execute
from stack import Stack

pytestmark = pytest.mark.e2e

FAKE_NVML = Path(__file__).resolve().parents[1] / "fake_nvml"


@pytest.fixture(scope="module")
def reclaim_stack(tmp_path_factory):
    settings = {k: v for k, v in SETTINGS.items() if k != "ssh"}
    settings["ops"] = {"probe_interval": 1}
    # the default require_measurement (true); seconds rather than minutes
    settings["reclaim"] = {"enabled": True, "idle": 3, "grace": 6, "interval": 1}
    s = Stack(tmp_path_factory.mktemp("reclaim"), settings, PASSWORDS).start()
    yield s
    s.stop()


@pytest.fixture
def agent(reclaim_stack, tmp_path):
    """Start the node agent with the stand-in NVML: ``agent(util)`` sets device 0's use."""
    spec = tmp_path / "nvml.json"
    procs: list[subprocess.Popen] = []

    def set_use(util: int) -> None:
        tmp = spec.with_suffix(".tmp")
        tmp.write_text(json.dumps([{"util": util, "memory_used": 2**30, "processes": [[4242, 2**30]]}]))
        tmp.replace(spec)
        if not procs:
            env = os.environ | {
                "PYTHONPATH": os.pathsep.join([str(FAKE_NVML), os.environ.get("PYTHONPATH", "")]),
                "YT_FAKE_NVML": str(spec),
                "YT_TOKEN": reclaim_stack.token("admin"),
            }
            cmd = [sys.executable, "-m", "yitong_services.core.app", "node-report"]
            cmd += ["--api", reclaim_stack.platform, "--device", "nvidia.com/gpu=1", "--every", "0.5"]
            procs.append(subprocess.Popen(cmd, env=env))

    yield set_use
    for p in procs:
        p.terminate()
        p.wait(10)


def test_reclaim_with_a_measurement(reclaim_stack, agent):
    stack = reclaim_stack
    admin, alice = stack.token("admin"), stack.token("alice")
    with stack.hub(alice) as hub:
        r = hub.post("/users/alice/server", json={"vc": "vision", "profile": "gpu-1"})
        assert r.status_code in (201, 202), r.text
    server = stack.wait_ready(admin, "alice")
    base = stack.url + server["url"]
    headers = {"Authorization": f"token {alice}"}
    (mine,) = [a for a in stack.allocations(admin, vc="vision") if a["ref"] == "alice/"]
    assert mine["devices"]["visible"] == [0] and mine["devices"]["type"] == "nvidia.com/gpu"

    def decision():
        r = httpx.get(f"{stack.platform}/reclaim", headers={"Authorization": f"token {admin}"})
        return next((d for d in r.json()["servers"] if d["ref"] == "alice/"), None)

    def wait_for(check, what, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            d = decision()
            if d and check(d):
                return d
            time.sleep(0.3)
        raise AssertionError(f"{what}: {decision()}")

    # 1. no measurement (the service finds no NVML here, no agent yet): kept past idle + grace
    d = wait_for(lambda d: "not measured" in d["reason"], "no measurement")
    time.sleep(10)
    d = decision()
    assert d["action"] == "keep" and "its accelerator's use is not measured (no NVML on this node" in d["reason"], d
    with stack.hub(admin) as hub:
        assert hub.get("/users/alice").json()["servers"][""]["ready"]

    # 2. the agent measures GPU 0 at 60%: kept as in use
    agent(60)
    d = wait_for(lambda d: d["reason"] == "its accelerator is in use (60%)", "measured busy")
    assert d["measured"].startswith("GPU 0 60% (1 processes) on ")

    # 3. a busy kernel keeps it, however idle its GPU
    kernel = httpx.post(base + "api/kernels", json={"name": "python3"}, headers=headers, timeout=60).json()
    ws = base.replace("http://", "ws://") + f"api/kernels/{kernel['id']}/channels"
    execute(ws, alice, "import time; time.sleep(600)")
    agent(0)
    wait_for(lambda d: d["reason"] == "a kernel is busy" and "GPU 0 0%" in d["measured"], "busy kernel")
    time.sleep(10)
    assert decision()["reason"] == "a kernel is busy"
    assert httpx.delete(base + f"api/kernels/{kernel['id']}", headers=headers, timeout=30).status_code == 204

    # 4. measured idle, kernels idle: warned, the warning readable from the server, then stopped
    warned = wait_for(lambda d: d["warned_at"] is not None, "warned")
    assert warned["action"] in ("warn", "keep")
    r = httpx.get(base + "yitong/api/reclaim/warnings", params={"server": ""}, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    (w,) = r.json()["warnings"]
    assert w["ref"] == "alice/" and w["stop_at"] == w["warned_at"] + 6 and w["devices"] == {"nvidia.com/gpu": 1}
    deadline = time.monotonic() + 60
    with stack.hub(admin) as hub:
        while "" in hub.get("/users/alice").json().get("servers", {}) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "" not in hub.get("/users/alice").json().get("servers", {}), decision()
    stopped = httpx.get(f"{stack.platform}/reclaim", headers={"Authorization": f"token {admin}"}).json()["stopped"]
    assert stopped[-1]["ref"] == "alice/" and "after a warning" in stopped[-1]["reason"]
    deadline = time.monotonic() + 30
    while [a for a in stack.allocations(admin, vc="vision") if a["user"] == "alice"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not [a for a in stack.allocations(admin, vc="vision") if a["user"] == "alice"]  # the GPU is back
