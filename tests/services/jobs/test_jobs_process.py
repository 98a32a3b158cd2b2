"""The platform service as a real process: a 2-process DDP job with its ledger, and kill -9 + restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from helpers import free_port, start_service
from jobs_helpers import DDP, PY, TERMINAL

from tests.services.conftest import PREFIX, SETTINGS


class Proc:
    def __init__(self, hub, db_url: str, tmp: Path) -> None:
        self.hub, self.port = hub, free_port()
        settings = {
            **SETTINGS,
            "database": {"url": db_url},
            "jobs": {"poll_interval": 0.2},
            "service": {"reconcile_interval": 0},
        }
        self.settings = tmp / "settings.yaml"
        self.settings.write_text(yaml.safe_dump(settings))
        self.data = tmp / "data"
        self.log = tmp / "service.log"
        self.proc: subprocess.Popen | None = None
        self.base = f"http://127.0.0.1:{self.port}{PREFIX}api/v1/"

    def start(self) -> None:
        self.proc = start_service(sys.executable, self.settings, self.data, self.port, self.hub, self.log, timeout=60)

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)

    def call(self, who: str, method: str, path: str, **kw) -> httpx.Response:
        headers = {"Authorization": f"token {self.hub.tokens[who]}"}
        return httpx.request(method, self.base + path, headers=headers, timeout=30, **kw)

    def wait(self, who: str, job_id: int, states=TERMINAL, timeout: float = 120) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            job = self.call(who, "GET", f"jobs/{job_id}").json()
            if job["state"] in states:
                return job
            assert time.monotonic() < deadline, (job, self.log.read_text()[-2000:])
            time.sleep(0.2)


def test_ddp_job_and_ledger(proc, tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "code" / "train.py"
    script.parent.mkdir()
    script.write_text(DDP)
    body = {
        "name": "ddp",
        "vc": "vision",
        "environment": {"kernel": "python3"},
        "command": ["python", "train.py"],
        "framework": "pytorch",
        "procs_per_node": 2,
        "cpu": 2,
        "memory": "1Gi",
        "code": {"commit": "0123abcd", "dirty_hash": "b3:ffee", "path": str(script.parent)},
    }
    r = proc.call("alice", "POST", "jobs", json=body)
    assert r.status_code == 201, r.text
    job = proc.wait("alice", r.json()["id"], timeout=180)
    logs = {rank: proc.call("alice", "GET", f"jobs/{job['id']}/logs?rank={rank}").text for rank in (0, 1)}
    assert (job["state"], job["exit_code"]) == ("succeeded", 0), (job.get("reason"), logs)
    for rank in (0, 1):
        text = proc.call("alice", "GET", f"jobs/{job['id']}/logs?rank={rank}").text
        assert f"rank {rank} of 2" in text
    record = proc.call("alice", "GET", f"runs/{job['runs'][0]}").json()
    assert record["code"] == body["code"]
    assert record["metrics"]["world"] == 2 and "loss" in record["metrics"]
    assert [a["path"] for a in record["artifacts"]] == ["model.pt"]
    assert record["environment"]["python"] == sys.executable and len(record["environment"]["pip_freeze_sha256"]) == 64
    assert record["devices"]["cpu_model"] is not None or record["devices"]["host"]
    assert record["parameters"]["procs_per_node"] == 2 and record["parameters"]["framework"] == "pytorch"
    assert record["inputs"] == [] and record["state"] == "succeeded"


def test_kill9_restart_accounts_for_every_job(proc, tmp_path):
    shared, release = tmp_path / "ran.txt", tmp_path / "release"
    ids = []
    for n in range(24):
        # each job holds until the test releases it (at most 120 s): 20 must be running at once
        # however slowly a loaded machine submits 24
        code = (
            f"import os, time; open({str(shared)!r}, 'a').write(os.environ['YITONG_JOB_ID'] + '\\n');"
            f"t = time.monotonic()\nwhile not os.path.exists({str(release)!r}) and time.monotonic() - t < 120:"
            f" time.sleep(0.05)\ntime.sleep({n % 3})"
        )
        body = {
            "name": f"k{n}",
            "vc": "default",
            "environment": {"kernel": "python3"},
            "command": [PY, "-c", code],
            "cpu": 0.1,
            "memory": "64Mi",
        }
        r = proc.call(["alice", "bob", "carol"][n % 3], "POST", "jobs", json=body)
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    deadline = time.monotonic() + 90
    while sum(j["state"] == "running" for j in proc.call("admin", "GET", "jobs").json()) < 20:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    running = [j for j in proc.call("admin", "GET", "jobs").json() if j["state"] == "running"]
    proc.kill9()
    # one job's processes die while the service is down: it must be failed with a reason, not rerun
    victim = running[0]
    os.killpg(int(victim["backend_ref"].split(":")[0]), signal.SIGKILL)
    time.sleep(1.5)
    proc.start()
    release.touch()
    jobs = {j: proc.wait("admin", j, timeout=120) for j in ids}
    lines = shared.read_text().split()
    others = [str(j) for j in ids if j != victim["id"]]
    assert sorted(x for x in lines if x != str(victim["id"])) == sorted(others), lines  # each ran exactly once
    assert lines.count(str(victim["id"])) <= 1  # killed, never started again
    assert jobs[victim["id"]]["state"] == "failed"
    assert "vanished" in jobs[victim["id"]]["reason"] and "down" in jobs[victim["id"]]["reason"]
    assert {jobs[j]["state"] for j in ids if j != victim["id"]} == {"succeeded"}
    assert proc.call("admin", "GET", "allocations").json() == []


# run as a job: its wrapper (its parent) and the wrapper's parent
LINEAGE = """
import json, os, pathlib
def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
def argv(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().decode(errors="replace").split("\\0")
wrapper = os.getppid()
server = parent(wrapper)
out = pathlib.Path(os.environ["YITONG_OUTPUT_DIR"])
(out / "lineage.json").write_text(json.dumps({"wrapper": wrapper, "server": server, "server_argv": argv(server), "env": os.environ.get("MARK")}))
"""


def test_wrappers_come_from_the_fork_server_which_comes_back_when_killed(proc, tmp_path):
    """The local backend starts each attempt's wrapper from its warm fork server (jobs/launcher.py),
    not from the service; the job's environment arrives whole; a killed fork server is started
    again for the next attempt, and the attempt it did not start is not lost."""
    from jobs_helpers import py_job

    def run(mark: str) -> dict:
        r = proc.call("alice", "POST", "jobs", json=py_job("lin", "vision", LINEAGE, env={"MARK": mark}))
        assert r.status_code == 201, r.text
        job = proc.wait("alice", r.json()["id"])
        assert job["state"] == "succeeded", (job, proc.log.read_text()[-2000:])
        return json.loads((proc.data / "jobs" / str(job["id"]) / "outputs" / "lineage.json").read_text())

    first = run("one")
    assert first["env"] == "one"
    assert first["server"] != proc.proc.pid and "yitong_services.jobs.launcher" in " ".join(first["server_argv"])
    assert run("two")["server"] == first["server"]  # the same warm server
    os.kill(first["server"], signal.SIGKILL)
    third = run("three")
    assert third["env"] == "three" and third["server"] != first["server"]
