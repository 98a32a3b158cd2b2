"""An HPO experiment on a multi-user machine: the platform service runs as root (a real process,
``MultiUser`` from the confinement tests), each trial is a job of the person's own account (not
root, no supplementary groups) in its attempt's cgroup where the host has cgroups, and its reports
(``yitong_lab.hpo``, from the account's 0700 job folder) reach the experiment: every trial
completes with its curve and final value, and the best is the best of them."""

from __future__ import annotations

import os
import pwd
import time

import pytest
from shared_python import shared_bin

from tests.services.core.test_confinement import MultiUser
from yitong_services.core import cgroups

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="multi-user mode needs root (CI runs as root)")

# reports who ran it (uid, supplementary groups) and whether it sits in a job attempt's cgroup
TRIAL = """
import os
from yitong_lab import hpo
p = hpo.get_params()
cgroup = open("/proc/self/cgroup").read()
hpo.report(float(os.getuid()))
hpo.report(float(len(os.getgroups())))
hpo.report(1.0 if "/job-" in cgroup else 0.0)
hpo.report_final(p["x"])
"""


def test_an_experiments_trials_run_as_the_persons_account(hub, tmp_path):
    mu = MultiUser(hub, tmp_path)
    try:
        mu.start()
        who = mu.users[0]
        body = {
            "name": "multi-user",
            "vc": "default",
            "space": {"x": {"_type": "uniform", "_value": [0, 1]}},
            "tuner": {"name": "Random"},
            "concurrency": 2,
            "max_trials": 3,
            "template": {
                "environment": {"kernel": "python3"},
                "command": [str(shared_bin() / "python"), "-c", TRIAL],
                "cpu": 0.2,
                "memory": "256Mi",
            },
        }
        r = mu.call(who, "POST", "experiments", json=body)
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + 180
        while (exp := mu.call(who, "GET", f"experiments/{r.json()['id']}").json())["state"] != "done":
            assert time.monotonic() < deadline, (exp, mu.log.read_text()[-3000:])
            time.sleep(0.3)
        assert exp["counts"] == {"complete": 3}, (exp["trials"], mu.log.read_text()[-3000:])
        account = pwd.getpwnam(mu.call(who, "GET", "spawn-options").json()["account"]["name"])
        confined = 1.0 if cgroups.detect().kind != "none" else 0.0
        for trial in exp["trials"]:
            curve = [point["value"] if isinstance(point, dict) else point for point in trial["intermediate"]]
            assert curve == [float(account.pw_uid), 0.0, confined], trial
        assert account.pw_uid != 0
        assert exp["best"]["value"] == max(t["value"] for t in exp["trials"])
        # the trials' jobs are the person's own
        assert {mu.call(who, "GET", f"jobs/{t['job_id']}").json()["user"] for t in exp["trials"]} == {who}
    finally:
        mu.stop()
