"""The service as a real process: kill -9 in the middle of an experiment, restart, and it resumes
with every trial run exactly once and none lost."""

from __future__ import annotations

import time

import pytest
from jobs_helpers import PY

from tests.services.jobs.test_jobs_process import Proc

TRIAL = """
import os, time
from yitong_lab import hpo
p = hpo.get_params()
open({ran!r}, "a").write(os.environ["NNI_TRIAL_SEQ_ID"] + "\\n")
for i in range(3):
    hpo.report(p["x"] * i)
    time.sleep(0.5)
hpo.report_final(p["x"])
"""


@pytest.fixture
def proc(hub, db_url, tmp_path):
    p = Proc(hub, db_url, tmp_path)
    p.start()
    yield p
    p.stop()


def wait_exp(proc, exp_id, ok, timeout=120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        exp = proc.call("alice", "GET", f"experiments/{exp_id}").json()
        if ok(exp):
            return exp
        assert time.monotonic() < deadline, (exp, proc.log.read_text()[-2000:])
        time.sleep(0.1)


def test_kill9_restart_resumes_without_loss_or_rerun(proc, tmp_path):
    ran = tmp_path / "ran.txt"
    body = {
        "name": "durable",
        "vc": "vision",
        "space": {"x": {"_type": "uniform", "_value": [0, 1]}},
        "tuner": {"name": "TPE", "args": {"n_startup_trials": 3}},
        "concurrency": 2,
        "max_trials": 8,
        "template": {"environment": {"kernel": "python3"}, "command": [PY, "-c", TRIAL.format(ran=str(ran))], "cpu": 0.5, "memory": "64Mi"},
    }
    r = proc.call("alice", "POST", "experiments", json=body)
    assert r.status_code == 201, r.text
    exp_id = r.json()["id"]
    wait_exp(proc, exp_id, lambda e: e["counts"].get("complete", 0) >= 2 and e["counts"].get("running", 0) == 2)
    proc.kill9()
    time.sleep(0.5)
    proc.start()
    exp = wait_exp(proc, exp_id, lambda e: e["state"] == "done", timeout=180)
    assert exp["counts"] == {"complete": 8}, exp["trials"]
    assert sorted(t["number"] for t in exp["trials"]) == list(range(8))
    assert len({t["job_id"] for t in exp["trials"]}) == 8
    assert sorted(int(n) for n in ran.read_text().split()) == list(range(8))  # each trial ran exactly once
    assert all(len(t["intermediate"]) == 3 for t in exp["trials"])  # no report read twice or lost
    assert exp["best"]["value"] == max(t["value"] for t in exp["trials"])
