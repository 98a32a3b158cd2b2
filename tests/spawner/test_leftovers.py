"""yitong_spawner/leftovers.py on real processes: which ones a mark finds, and how they are stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from yitong_spawner import leftovers

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="another account's process needs root (CI runs as root)")
NOBODY = 65534


def _sleeper(mark: str | None, uid: int | None = None) -> subprocess.Popen:
    env = {"PATH": os.environ["PATH"]}
    if mark is not None:
        env[leftovers.MARK] = mark
    proc = subprocess.Popen(["sleep", "60"], env=env, user=uid, start_new_session=True)
    # Popen returns once the exec can no longer fail, a moment before the kernel has set up the
    # new program's environment: until then /proc shows an empty one
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/environ", "rb") as f:
            if b"PATH=" in f.read():
                return proc
        time.sleep(0.01)
    raise TimeoutError(f"sleep {proc.pid} shows no environment")


def _pids(pidfds: list[int]) -> set[int]:
    out = set()
    for pidfd in pidfds:
        with open(f"/proc/self/fdinfo/{pidfd}") as f:
            out |= {int(line.split()[1]) for line in f if line.startswith("Pid:")}
        os.close(pidfd)
    return out


@needs_root
def test_only_the_marked_processes_of_the_account_are_found():
    """The mark must be a whole entry of the environment, and the process the account's: a
    process of another account carrying it (planted, or by chance) is not touched."""
    ours = _sleeper("m1")
    other_mark = _sleeper("m10")  # a longer mark that starts with ours
    unmarked = _sleeper(None)
    theirs = _sleeper("m1", uid=NOBODY)
    procs = [ours, other_mark, unmarked, theirs]
    try:
        assert _pids(leftovers.marked("m1", os.getuid())) == {ours.pid}
        assert _pids(leftovers.marked("m1", NOBODY)) == {theirs.pid}
        assert _pids(leftovers.marked("m2", os.getuid())) == set()
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_stop_ends_them_and_a_process_gone_meanwhile_is_no_error():
    """SIGTERM first; a process that ended between the scan and the stop (its pidfd still names
    it, never a reused pid) is skipped quietly."""
    stays, goes = _sleeper("m3"), _sleeper("m3")
    pidfds = leftovers.marked("m3", os.getuid())
    assert len(pidfds) == 2
    goes.kill()
    goes.wait()
    start = time.monotonic()
    assert leftovers.stop(pidfds, grace=30) == 0  # sleep ends on SIGTERM: none needed SIGKILL
    assert time.monotonic() - start < 10
    assert stays.wait(10) == -15


def test_one_that_ignores_sigterm_is_killed_after_the_grace():
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)",
        ],
        env={**os.environ, leftovers.MARK: "m4"},
        stdout=subprocess.PIPE,
    )
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == b"1\n"  # its handler is set
        start = time.monotonic()
        assert leftovers.stop(leftovers.marked("m4", os.getuid()), grace=0.5) == 1
        assert stubborn.wait(10) == -9 and time.monotonic() - start >= 0.5
    finally:
        stubborn.kill()
        stubborn.wait()
