"""An attempt whose folder cannot be made says why (jobs/wrapper.py ``setup_failure``,
runner_local.py ``setup_refused``) rather than "process ... vanished without an exit record";
once space returns, jobs run again. The disk is real: an 8 MiB tmpfs (root, as CI is) holding the
service's data directory, filled by a file until ENOSPC."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest
from helpers import fill, tmpfs_disk
from jobs_helpers import py_job, wait_state

from yitong_services.jobs import wrapper


@pytest.fixture
def tiny_data_dir(tmp_path):
    with tmpfs_disk(tmp_path / "tiny", "8m", "0755") as disk:
        yield disk


async def test_a_full_disk_fails_the_attempt_saying_so(service_factory, tiny_data_dir):
    """With a hub token the service's own record of it cannot be written: "could not start: no
    space ..."; without one the wrapper starts and cannot set its attempt up: "could not create
    ...". Neither names a path of the server's."""
    async with service_factory(data_dir="tiny", jobs={"poll_interval": 0.1}) as svc:
        filler = tiny_data_dir / "filler"
        fill(filler)
        reasons = {}
        for name, extra in (("token", {}), ("bare", {"hub_token": False})):
            r = await svc.call("alice", "POST", "jobs", json=py_job(name, "vision", "print('ran')", **extra))
            assert r.status_code == 201, r.text
            done = await wait_state(svc, "alice", r.json()["id"], timeout=30)
            assert done["state"] == "failed", done
            reasons[name] = done["reason"]
        assert reasons["token"] == "could not start: no space left on the data disk", reasons
        assert reasons["bare"].startswith("could not ") and "vanished" not in reasons["bare"], reasons
        assert reasons["bare"].endswith(": no space left on the data disk"), reasons
        assert not any(str(tiny_data_dir) in r for r in reasons.values()), reasons

        filler.unlink()  # space returns: the next job runs
        r = await svc.call("alice", "POST", "jobs", json=py_job("after", "vision", "print('ran')"))
        assert r.status_code == 201, r.text
        assert (await wait_state(svc, "alice", r.json()["id"], timeout=30))["state"] == "succeeded"


def test_the_wrapper_writes_why_beside_the_folder(tmp_path):
    """The wrapper itself (a real process): its attempt folder's place is taken by a file
    (ENOTDIR), so it starts nothing and writes why beside it."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "blocked").write_text("")  # attempt-1 would be made inside a file
    here = job / "blocked" / "attempt-1"
    p = subprocess.run(
        [sys.executable, "-m", "yitong_services.jobs.wrapper", str(here), "0", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 125 and p.stderr == "", p.stderr
    # beside a folder that cannot exist: nothing was written, and the service diagnoses nothing
    # more than its disk shows (room, writable): None
    from yitong_services.jobs.runner_local import setup_refused

    assert setup_refused(job / "attempt-1") is None
    # a folder it may make, a file in the way of its logs: the reason is beside it
    (job / "attempt-2").mkdir()
    (job / "attempt-2" / "logs").write_text("")
    here = job / "attempt-2"
    p = subprocess.run(
        [sys.executable, "-m", "yitong_services.jobs.wrapper", str(here), "0", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 125
    assert (job / "attempt-2.why").read_text() == "could not create the attempt folder: file exists\n"
    assert setup_refused(here) == "could not create the attempt folder: file exists"


@pytest.mark.parametrize(
    ("code", "step", "reason"),
    [
        (
            errno.ENOSPC,
            "create the attempt folder",
            "could not create the attempt folder: no space left on the data disk",
        ),
        (
            errno.EDQUOT,
            "create the job's outputs folder",
            "could not create the job's outputs folder: the job owner's disk quota on the data disk is spent",
        ),
        (
            errno.EACCES,
            "create the attempt folder",
            "could not create the attempt folder: permission denied (an administrator must check the job folders' disk)",
        ),
        (
            errno.EROFS,
            "write the attempt's pid file",
            "could not write the attempt's pid file: read-only file system (an administrator must check the job folders' disk)",
        ),
    ],
)
def test_setup_failure(code, step, reason):
    assert wrapper.setup_failure(OSError(code, os.strerror(code), "/srv/secret"), step) == reason
