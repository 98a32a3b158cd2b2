"""Kernel limits of local job attempts (core/cgroups.py, jobs/attempt_limits.py), tried from
inside: a real multi-user service as root (``MultiUser``) runs jobs of a fresh account that
exceed their memory, spin past their cpu, fork without end and leave processes behind in
sessions of their own. PID namespaces are off in this service (``pid_namespaces: false``):
their end also kills what a job left, and these tests check the cgroups alone.

Each test fails without its protection (checked by hand with ``backends.local.cgroups: false``:
the hog succeeds, the spinner gets what the machine has free (0.3-2 cores), the bomb makes all
300 children, the sleeper outlives its job; without the service's read of the cgroup's counter
the job whose wrapper the kernel chose "vanished without an exit record").
"""

from __future__ import annotations

import contextlib
import json
import os
import time

import httpx
import pytest

from tests.services.conftest import PREFIX
from tests.services.core.test_confinement import MultiUser, needs_root
from yitong_services.core import cgroups

pytestmark = needs_root
MAX_PROCESSES = 40


@pytest.fixture(scope="module")
def mu(hub, tmp_path_factory):
    local = {"inventory": {}, "mode": "multi-user", "pid_namespaces": False, "max_processes": MAX_PROCESSES}
    m = MultiUser(hub, tmp_path_factory.mktemp("limits"), backends={"local": local})
    try:
        m.start()
        yield m
    finally:
        m.stop()


def _log(mu: MultiUser, who: str, job: dict) -> str:
    return mu.call(who, "GET", f"jobs/{job['id']}/logs?rank=0").text


def _report(mu: MultiUser, who: str, job: dict) -> dict:
    log = _log(mu, who, job)
    assert "REPORT " in log, (job, log, mu.log.read_text()[-3000:])
    return json.loads(log.split("REPORT ", 1)[1].splitlines()[0])


def test_the_service_says_limits_are_enforced(mu):
    limits = mu.call(mu.users[0], "GET", "health").json()["limits"]
    assert limits["by"] in ("cgroup-v1", "cgroup-v2"), limits
    assert f"at most {MAX_PROCESSES} processes" in limits["message"]
    assert "Limits are enforced by the kernel (cgroup v" in mu.log.read_text()  # the start line
    page = httpx.get(
        f"http://127.0.0.1:{mu.port}{PREFIX}console", headers={"Authorization": f"token {mu.tokens['admin']}"}
    )
    assert page.status_code == 200 and "Limits are enforced by the kernel" in page.text, page.text[:500]


def test_a_job_over_its_memory_is_stopped_and_says_so(mu):
    hog = "x = b'1' * (256 << 20); print('held', len(x))"
    job = mu.submit(mu.users[0], {"name": "hog", "memory": "64Mi", "command": ["python", "-c", hog]})
    assert job["state"] == "failed", (job, _log(mu, mu.users[0], job))
    assert "memory limit 64Mi exceeded" in job["reason"], job


SPIN = r"""
import os, time
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 3
        while time.monotonic() < end:
            pass
        os._exit(0)
    kids.append(pid)
start = time.monotonic()
for pid in kids:
    os.waitpid(pid, 0)
t = os.times()
print("REPORT", '{"cores": %f}' % ((t.children_user + t.children_system) / (time.monotonic() - start)))
"""


def test_a_job_gets_no_more_cpu_than_it_asked_for(mu):
    """Three spinning processes of a 0.1-cpu job: together at most ~0.1 cores (a hard quota, not
    a weight: it holds on an idle machine too)."""
    who = mu.users[0]
    job = mu.submit(who, {"name": "spin", "cpu": 0.1, "command": ["python", "-c", SPIN]})
    assert job["state"] == "succeeded", (job, _log(mu, who, job))
    assert _report(mu, who, job)["cores"] <= 0.2


BOMB = r"""
import os, time
made, refused = 0, 0
for _ in range(300):  # bounded: without a limit it makes 300 sleepers and stops
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    made += 1
print("REPORT", '{"made": %d, "refused": %d}' % (made, refused), flush=True)
"""


def test_a_fork_bomb_stops_at_the_process_limit(mu):
    who = mu.users[0]
    job = mu.submit(who, {"name": "bomb", "command": ["python", "-c", BOMB]})
    report = _report(mu, who, job)
    assert report["made"] < MAX_PROCESSES and report["refused"] > 0, report
    assert job["state"] == "succeeded", job  # its sleepers went with it (killed with the cgroup)


# the job's program leaves a sleeper in a session of its own (setsid, then a double fork) and says
# its pid; with "wait" it then waits to be cancelled
ESCAPE = r"""
import os, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        os.execvp("sleep", ["sleep", "600"])
    os._exit(0)
os.close(w)
print("REPORT", '{"sleeper": %s}' % os.read(r, 32).decode(), flush=True)
if sys.argv[1] == "wait":
    time.sleep(600)
"""


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_what_a_job_left_in_a_session_of_its_own_ends_with_it(mu):
    who = mu.users[0]
    job = mu.submit(who, {"name": "leaver", "command": ["python", "-c", ESCAPE, "end"]})
    assert job["state"] == "succeeded", job
    sleeper = _report(mu, who, job)["sleeper"]
    assert _gone(sleeper), f"the job's sleeper {sleeper} outlived the job"


def test_what_a_cancelled_job_left_ends_with_it(mu):
    who = mu.users[0]
    r = mu.call(
        who,
        "POST",
        "jobs",
        json={
            "vc": "default",
            "name": "leaver",
            "environment": {"kernel": "python3"},
            "cpu": 0.1,
            "memory": "64Mi",
            "command": ["python", "-c", ESCAPE, "wait"],
        },
    )
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    deadline = time.monotonic() + 120
    while "REPORT" not in (log := mu.call(who, "GET", f"jobs/{job_id}/logs?rank=0").text):
        assert time.monotonic() < deadline, mu.log.read_text()[-3000:]
        time.sleep(0.2)
    sleeper = json.loads(log.split("REPORT ", 1)[1].splitlines()[0])["sleeper"]
    assert not _gone(sleeper, 0.2)
    assert mu.call(who, "POST", f"jobs/{job_id}/cancel").status_code in (200, 202)
    while (job := mu.call(who, "GET", f"jobs/{job_id}").json())["state"] not in ("cancelled", "failed"):
        assert time.monotonic() < deadline + 60, job
        time.sleep(0.2)
    assert job["state"] == "cancelled", job
    assert _gone(sleeper), f"the cancelled job's sleeper {sleeper} outlived it"


def test_the_cgroups_of_ended_attempts_are_removed(mu):
    """Every attempt above has ended: none of their cgroups is left (the OOM-killed one's too)."""
    parent = cgroups.parent_name(mu.data.absolute())
    left = cgroups.children(cgroups.detect(), parent, "job-")
    assert left == [], left


def test_an_oom_kill_of_the_wrapper_itself_still_says_memory(mu):
    """A job that lowers its processes' OOM score back to 0 and fills its memory with tmpfs pages
    (charged to its cgroup, in no process's size) gets its wrapper chosen by the OOM killer (the
    largest process): no exit record, and the service reads the cgroup's counter instead. Last
    here: that attempt's emptied cgroup is kept (its counter is the only record) until the next
    start's sweep."""
    who = mu.users[0]
    shm = f"/dev/shm/yt-limits-{os.getpid()}"
    fill = f"sleep 0.5; echo 0 > /proc/self/oom_score_adj; head -c 200M /dev/zero > {shm}; sleep 5"
    try:
        job = mu.submit(who, {"name": "shm", "memory": "64Mi", "command": fill})
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(shm)
    assert job["state"] == "failed", (job, _log(mu, who, job))
    assert job["reason"] == "memory limit 64Mi exceeded (the kernel stopped the job's supervisor too)", job
