"""The Slurm controller stops answering while jobs are submitted: no job fails for it, and every
job runs exactly once (each job appends its id to a marker file: the jobs themselves say how often
they ran).

Real Slurm (the CI's slurmctld): it is SIGSTOPped (hung, as in the operator's trial: submits time
out) and, in the second test, stopped and started again (submits are refused at once). While it
does not answer, the jobs stay admitted with a reason that says so ("submission unknown"); once it
answers, each is found by its name or, after ``unknown_settle`` seconds without a trace,
submitted anew.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import require
from jobs_helpers import py_job, wait_state

from tests.services.jobs.test_jobs_slurm import slurm_settings, submit

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def partition() -> str:
    from jobs_helpers import slurm_partition

    found = slurm_partition()
    require("Slurm", found is not None, "sinfo shows no usable node (start it with .ci/run)")
    require("root", os.geteuid() == 0, "stopping slurmctld needs root (CI runs as root)")
    return found


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'yitong.sqlite'}"


def controller() -> int:
    out = subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True, text=True).stdout.split()
    assert out, "slurmctld is not running"
    return int(out[0])


def slurm_answers() -> bool:
    done = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    return done.returncode == 0 and any(s in done.stdout for s in ("idle", "mixed", "allocated"))


def start_controller() -> None:
    subprocess.run(["/usr/sbin/slurmctld"], check=True)
    deadline = time.monotonic() + 60
    while not slurm_answers():
        assert time.monotonic() < deadline, "slurmctld did not come back"
        subprocess.run(["scontrol", "update", "nodename=localhost", "state=resume"], capture_output=True)
        time.sleep(1)


def marking(marks: Path) -> str:
    return f"import os; open({str(marks)!r}, 'a').write(os.environ['YITONG_JOB_ID'] + '\\n')"


async def until_reason(svc, job_ids, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        jobs = [(await svc.call("alice", "GET", f"jobs/{j}")).json() for j in job_ids]
        if all(j["state"] == "admitted" and text in j["reason"] for j in jobs):
            return
        assert time.monotonic() < deadline, [(j["id"], j["state"], j["reason"]) for j in jobs]
        await asyncio.sleep(0.2)


def settings(partition: str) -> dict:
    # sbatch is given 3 s (a hung controller makes it wait its own 10 s MessageTimeout and more)
    return slurm_settings(partition, command_timeout=3, unknown_settle=12)


async def test_a_hung_controller_leaves_submits_unknown_and_each_job_runs_once(service_factory, partition, tmp_path):
    marks = tmp_path / "marks"
    async with service_factory(**settings(partition)) as svc:
        pid = controller()
        os.kill(pid, signal.SIGSTOP)
        try:
            ids = [await submit(svc, "alice", py_job(f"hung-{i}", "vision", marking(marks))) for i in range(4)]
            await until_reason(svc, ids, "submission unknown: the Slurm controller")
            await asyncio.sleep(2)  # a few ticks while it still hangs: nothing fails, nothing is submitted twice
            for j in ids:
                job = (await svc.call("alice", "GET", f"jobs/{j}")).json()
                assert job["state"] == "admitted" and job["backend_ref"] is None, job
        finally:
            os.kill(pid, signal.SIGCONT)
        for j in ids:
            job = await wait_state(svc, "alice", j, timeout=120)
            assert (job["state"], job["exit_code"]) == ("succeeded", 0), job
    ran = marks.read_text().split()
    assert sorted(ran) == sorted(str(j) for j in ids), ran  # each exactly once


async def test_a_stopped_controller_fails_no_job_and_each_runs_once_after_its_restart(
    service_factory, partition, tmp_path
):
    marks = tmp_path / "marks"
    async with service_factory(**settings(partition)) as svc:
        pid = controller()
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True).returncode != 0:
                break
            time.sleep(0.1)
        try:
            ids = [await submit(svc, "alice", py_job(f"down-{i}", "vision", marking(marks))) for i in range(3)]
            await until_reason(svc, ids, "submission unknown: the Slurm controller")
        finally:
            start_controller()
        for j in ids:
            job = await wait_state(svc, "alice", j, timeout=120)
            assert (job["state"], job["exit_code"]) == ("succeeded", 0), job
    assert sorted(marks.read_text().split()) == sorted(str(j) for j in ids)
