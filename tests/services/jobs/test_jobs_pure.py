"""Pure parts of jobs: state machine, fair order, never-fits, ledger builders, /proc facts."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

import pytest

from yitong_services.jobs import ledger, procs, states
from yitong_services.jobs.queue import Waiting, fair_order
from yitong_services.jobs.records import never_fits


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        ("queued", "admitted", True),
        ("admitted", "running", True),
        ("running", "succeeded", True),
        ("running", "preempted", True),
        ("failed", "queued", True),
        ("cancelled", "queued", True),
        ("succeeded", "queued", False),
        ("queued", "running", False),
        ("running", "admitted", False),
    ],
)
def test_transitions(old, new, ok):
    assert states.can_move(old, new) is ok
    if not ok:
        with pytest.raises(states.TransitionError, match=f"a {old} job cannot become {new}"):
            states.check_move(old, new)


@pytest.mark.parametrize(
    ("exit_code", "cancel", "state"),
    [(0, False, "succeeded"), (1, False, "failed"), (None, False, "failed"), (0, True, "cancelled")],
)
def test_final_state(exit_code, cancel, state):
    assert states.final_state(exit_code, cancel) == state


def test_fair_order_interleaves_vcs_within_priority():
    t = datetime(2025, 1, 1)
    jobs = [
        Waiting(1, "a", 0, t),
        Waiting(2, "a", 0, t + timedelta(1)),
        Waiting(3, "a", 0, t + timedelta(2)),
        Waiting(4, "b", 0, t + timedelta(3)),
        Waiting(5, "c", 100, t + timedelta(4)),
    ]
    assert [j.id for j in fair_order(jobs)] == [5, 1, 4, 2, 3]


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ({"cpu": 2}, None),
        ({"cpu": 9}, "the job asks for 9 cpu; VC v's quota is 8 cpu"),
        ({"nvidia.com/gpu": 1}, "VC v has no nvidia.com/gpu in its quota"),
        ({"cpu": 5}, "the job asks for 5 cpu; the user cap in VC v is 4 cpu"),
    ],
)
def test_never_fits(request_, expected):
    assert never_fits(request_, "v", {"cpu": 8}, {"cpu": 4}, "alice") == expected


def test_ledger_records():
    rec = ledger.start_record(
        run_id=7,
        job={"id": 3, "name": "n", "vc": "v", "user": "u"},
        attempt=1,
        spec={"command": ["x"], "framework": "plain", "nodes": 1},
        inputs=[{"dataset": "v/d@latest", "mount": "d", "version": 2, "manifest": "ab", "version_id": 9, "path": "/p"}],
        code={"commit": "c", "dirty_hash": None, "path": "/src"},
        environment={"python": "py"},
        devices={},
        backend="local",
        started="t0",
    )
    assert rec["inputs"] == [{"dataset": "v/d@latest", "mount": "d", "version": 2, "manifest": "ab"}]
    assert rec["parameters"]["command"] == ["x"] and rec["state"] == "running"
    done = ledger.finish_record(
        rec,
        state="succeeded",
        exit_code=0,
        finished="t1",
        metrics={"acc": 1},
        artifacts=[{"path": "m", "size": 1, "blake3": "h"}],
    )
    assert (done["exit_code"], done["metrics"], rec["exit_code"]) == (0, {"acc": 1}, None)
    assert ledger.pinned_inputs(done) == [{"dataset": "v/d@2", "mount": "d"}]


def test_proc_start_time_identifies_a_process():
    me = os.getpid()
    started = procs.start_time(me)
    assert started and procs.alive(me, started) and not procs.alive(me, started + 1)
    assert procs.start_time(2**22 + 12345) is None


def test_artifacts_skip_links_planted_in_the_outputs(tmp_path):
    """A job owns its outputs directory: a link there to a file only the platform may read (or to
    a directory) is not described in the ledger."""
    from yitong_services.jobs.ledger import artifacts

    secret = tmp_path / "secret"
    secret.write_bytes(b"token")
    outputs = tmp_path / "outputs"
    (outputs / "sub").mkdir(parents=True)
    (outputs / "model.pt").write_bytes(b"w")
    (outputs / "sub" / "x.txt").write_bytes(b"xy")
    (outputs / "stolen").symlink_to(secret)
    (outputs / "tree").symlink_to(tmp_path)
    assert [(a["path"], a["size"]) for a in artifacts(outputs)] == [("model.pt", 1), ("sub/x.txt", 2)]
    linked = tmp_path / "linked-outputs"
    linked.symlink_to(outputs)
    assert artifacts(linked) == []


def test_the_fork_server_and_its_children_are_not_dumpable_and_the_jobs_program_is():
    """jobs/launcher.py: the server says PR_SET_DUMPABLE 0 when it starts, and each wrapper it
    forks inherits that, so a job of the same account can neither ptrace them nor read their
    memory (where requests' tokens linger); the job's program, exec-ed, is an ordinary process
    again. Run in a fresh interpreter, as the server would."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import ctypes, os, signal, subprocess, sys
        from yitong_services.jobs import launcher

        def dumpable():
            return ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE

        before = dumpable()
        launcher._prepare()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server lets the kernel reap; this waits
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, b"%d" % dumpable())
            os._exit(0)
        os.waitpid(pid, 0)
        child = os.read(r, 8).decode()
        probe = "import ctypes; print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"
        program = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
        print(before, dumpable(), child, program)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "0", "0", "1"]  # before, the server, its child, an exec-ed program


def test_a_submit_checked_against_a_vc_the_caller_read_still_refuses_a_non_member():
    """An experiment's pass reads the trial's VC itself (catalog.VCFacts): membership and quota
    are still checked, with the same sentences as a submit through the API."""
    from yitong_services.core.authz import Person
    from yitong_services.core.errors import Refusal
    from yitong_services.jobs.records import check
    from yitong_services.jobs.spec import spec_from_dict
    from yitong_services.vcs.catalog import VCFacts

    spec = spec_from_dict(
        {"name": "t", "vc": "v", "command": ["true"], "environment": {"kernel": "python3"}, "cpu": 1, "memory": "64Mi"}
    )
    alice = Person(name="alice", admin=False, groups=["team"])
    vc = VCFacts(name="v", groups=["team"], quota={"cpu": 4, "memory": 2**30}, user_caps={})  # stored amounts
    assert check(None, alice, spec, {"cpu": 8}, "local", vc=vc)[0] is vc
    with pytest.raises(Refusal) as e:
        check(None, alice, spec, {"cpu": 8}, "local", vc=vc._replace(groups=["others"]))
    assert (e.value.status, e.value.detail) == (404, "there is no VC v")
    with pytest.raises(Refusal) as e:
        check(None, alice, spec, {"cpu": 8}, "local", vc=vc._replace(quota={"cpu": 0.5}))
    assert e.value.status == 422 and "VC v" in e.value.detail


def test_a_results_last_complete_line_counts_and_an_overlong_one_is_dropped(monkeypatch):
    """jobs/wrapper.py's ``LastLine``: lines may arrive in any pieces; the last complete one is the
    result; a line over ``RESULT_LIMIT`` bytes is skipped whole (and its end does not make its
    tail a line); an unfinished last line does not count."""
    from yitong_services.jobs import wrapper

    monkeypatch.setattr(wrapper, "RESULT_LIMIT", 16)
    kept = wrapper.LastLine()
    for piece in (b'{"a"', b": 1}\n", b'{"b": 2}\n{"c"'):
        kept.feed(piece)
    assert kept.result() == {"b": 2}
    kept.feed(b"x" * 40)  # the unfinished '{"c"' grows past the limit: skipped to its end
    kept.feed(b'{"d": 4}\n')
    assert kept.result() == {"b": 2}
    kept.feed(b'{"e": 5}\n{"f": 6}')
    assert kept.result() == {"e": 5}
    for last, found in ((b"[1, 2]\n", None), (b"\xff\xfe\n", None), (b"NaN-ish\n", None), (b'{"g":7}\n', {"g": 7})):
        kept.feed(last)
        assert kept.result() == found
    # a writer that never pauses (the pipe is never empty): one drain stops at its budget, so the
    # wrapper gets back to its deadline and its child's end (reads stubbed: a real pipe's writer
    # cannot be made to outrun its reader every time)
    reads: list[int] = []
    monkeypatch.setattr(wrapper.os, "read", lambda fd, n: reads.append(n) or b"x" * n)
    assert wrapper._drain(99, wrapper.LastLine(), budget=1 << 18) is True
    assert len(reads) == 4


@pytest.mark.parametrize(
    "value, metrics",
    [
        ({"accuracy": 0.97, "epoch": 3}, {"accuracy": 0.97, "epoch": 3}),
        ({"x": float("nan")}, {}),
        ({"x": float("inf")}, {}),
        ({"x": True}, {}),
        ({"x": "high"}, {}),
        ({"x": 1, "y": [1]}, {}),  # dropped whole, not in part
        ({}, {}),
        ([1, 2], {}),
        ("0.5", {}),
        (None, {}),
        ({f"m{i}": i for i in range(65)}, {}),
        ({"k" * 129: 1}, {}),
    ],
)
def test_a_jobs_result_is_a_map_of_names_to_finite_numbers(value, metrics):
    assert ledger.result_metrics(value) == metrics


def test_the_exit_record_is_the_pid_files_second_line_and_an_older_attempts_exit_file_still_counts(tmp_path):
    """jobs/wrapper.py appends the exit record to ``pid`` (no new file); jobs/runner_local.py
    reads it once the line is whole, and reads the ``exit`` file of an attempt an older wrapper
    ran; the pid line is read alone either way."""
    import json
    import subprocess
    import sys

    from yitong_services.jobs import runner_local

    here = tmp_path / "job" / "attempt-1"
    program = "import json, os; os.write(int(os.environ['YITONG_RESULT_FD']), b'{\"loss\": 0.5}\\n')"
    wrapper = "import sys; from yitong_services.jobs.wrapper import main; sys.exit(main(sys.argv[1:]))"
    out = here / "outputs"
    argv = [sys.executable, "-c", wrapper, str(here), "0", "--mkdir", str(out), "--", sys.executable, "-c", program]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in here.iterdir()) == ["launcher.log", "logs", "outputs", "pid"]  # no exit file
    pid_line, exit_line, end = (here / "pid").read_text().split("\n")
    assert end == "" and runner_local.read_pid(here) == tuple(map(int, pid_line.split()))
    record = runner_local.read_exit(here)
    assert record == json.loads(exit_line) and (record["exit_code"], record["result"]) == (0, {"loss": 0.5})
    # an unfinished second line: still running
    (here / "pid").write_text(pid_line + '\n{"exit_code": 0, "en')
    assert runner_local.read_exit(here) is None and runner_local.read_pid(here) is not None
    # an older wrapper's attempt: a pid line and an exit file
    (here / "pid").write_text(pid_line + "\n")
    (here / "exit").write_text('{"exit_code": 3, "end": "2026-11-27T00:00:00+00:00", "reason": ""}')
    assert runner_local.read_exit(here)["exit_code"] == 3
    (here / "pid").write_text(pid_line + "\n[1, 2]\n")  # not a record: nothing, not an error
    (here / "exit").unlink()
    assert runner_local.read_exit(here) is None


def test_a_process_left_flooding_the_result_pipe_does_not_keep_the_attempt_from_ending(tmp_path):
    """The job's code is hostile: a process it leaves behind (in a session of its own, out of the
    group's reach) that writes to ``$YITONG_RESULT_FD`` without end does not keep the wrapper
    reading: the attempt ends when its program does, with the last whole line before the flood,
    and the flooder gets EPIPE when the wrapper closes the pipe."""
    import subprocess
    import sys
    import time

    from yitong_services.jobs import runner_local

    flood = "import os, sys\nfd = int(sys.argv[1])\nwhile True:\n    os.write(fd, b'x' * 65536)\n"
    program = (
        "import os, subprocess, sys\n"
        "fd = int(os.environ['YITONG_RESULT_FD'])\n"
        "os.write(fd, b'{\"acc\": 0.5}\\n')\n"
        f"subprocess.Popen([sys.executable, '-c', {flood!r}, str(fd)], pass_fds=(fd,), start_new_session=True)\n"
        "import time; time.sleep(0.5)\n"
    )
    here = tmp_path / "job" / "attempt-1"
    wrapper = "import sys; from yitong_services.jobs.wrapper import main; sys.exit(main(sys.argv[1:]))"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", wrapper, str(here), "0", "--", sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and time.monotonic() - start < 30, done.stderr
    record = runner_local.read_exit(here)
    assert record["exit_code"] == 0 and record["result"] == {"acc": 0.5}, record


def test_the_wrapper_spawns_the_job_with_nothing_of_its_own_but_the_result_pipe(tmp_path):
    """jobs/wrapper.py starts the job with ``posix_spawn``, not ``subprocess``: the job's code
    (hostile) finds no descriptor of the wrapper's open but stdin (/dev/null), stdout and stderr
    (its log) and ``$YITONG_RESULT_FD``, even one the wrapper was handed open and inheritable; its
    program is looked up on the job's PATH, not the wrapper's; it starts with SIGPIPE at its
    default and where ``--cwd`` says. A program that is not there, or may not be run, ends the
    attempt with exit 127 and a sentence."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from yitong_services.jobs import runner_local

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "probe").write_text(
        f"#!{sys.executable}\n"
        "import json, os\n"
        "def is_open(fd):\n    try:\n        return os.fstat(fd) is not None\n    except OSError:\n        return False\n"
        "fds = [fd for fd in range(1024) if is_open(fd)]\n"
        "print(json.dumps({'fds': fds, 'result': int(os.environ['YITONG_RESULT_FD']), 'cwd': os.getcwd(),\n"
        "  'stdin': os.readlink('/proc/self/fd/0')}))\n"
    )
    (bin_dir / "probe").chmod(0o755)
    (bin_dir / "locked").write_text("#!/bin/sh\n")
    (bin_dir / "locked").chmod(0o644)
    code = tmp_path / "code"
    code.mkdir()
    leaked = os.open(os.devnull, os.O_RDONLY)  # open and inheritable in the wrapper
    os.set_inheritable(leaked, True)
    wrapper = "import sys; from yitong_services.jobs.wrapper import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}

    def attempt(name: str, program: str) -> tuple[dict, str]:
        here = tmp_path / name / "attempt-1"
        argv = [sys.executable, "-c", wrapper, str(here), "0", "--cwd", str(code), "--", program]
        done = subprocess.run(argv, env=env, pass_fds=(leaked,), capture_output=True, text=True, timeout=60)
        assert done.returncode in (0, 127), done.stderr
        return runner_local.read_exit(here), (here / "launcher.log").read_text()

    record, log = attempt("probe", "probe")
    seen = json.loads(log)
    assert record["exit_code"] == 0 and seen["fds"] == [0, 1, 2, seen["result"]], seen
    assert seen["stdin"] == os.devnull and seen["cwd"] == str(code)
    # SIGPIPE not ignored, though the wrapper (Python) ignores it: a shell's own mask says
    (bin_dir / "mask").write_text("#!/bin/sh\nsed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status\n")
    (bin_dir / "mask").chmod(0o755)
    record, log = attempt("mask", "mask")
    assert record["exit_code"] == 0 and not int(log.strip(), 16) & 1 << (signal.SIGPIPE - 1), log
    os.close(leaked)
    for program, why in (("no-such-program", "No such file"), ("locked", "Permission denied")):
        record, _ = attempt(program, program)
        assert record["exit_code"] == 127 and record["reason"].startswith("cannot start:") and why in record["reason"]


def test_a_job_named_in_bytes_that_are_not_utf8_is_still_stopped_at_its_max_run_time(tmp_path):
    """jobs/procs.py reads /proc as bytes. A process may give itself any name (``prctl``
    PR_SET_NAME), and a strict UTF-8 read of its ``stat`` failed the wrapper's scan of its
    process group, so the wrapper died and the job outlived its ``max_run_time``. Now the wrapper
    stops it and says why. The wrapper runs in a session of its own, as the fork server starts it."""
    import json
    import subprocess
    import sys
    import time

    from yitong_services.jobs import wrapper
    from yitong_services.jobs.runner_local import SERVICES_ROOT

    program = "import ctypes, time; ctypes.CDLL(None).prctl(15, b'\\xff\\xfe-job', 0, 0, 0); time.sleep(60)"
    here = tmp_path / "attempt"
    argv = [sys.executable, "-I", "-S", "-c", wrapper.LAUNCH, SERVICES_ROOT, str(here), "2", "--"]
    start = time.monotonic()
    ran = subprocess.run(
        [*argv, sys.executable, "-c", program], start_new_session=True, capture_output=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr.decode()[-2000:]
    record = json.loads((here / "pid").read_text().splitlines()[1])
    assert (record["exit_code"], record["reason"]) == (-15, "max_run_time of 2s exceeded")
    assert time.monotonic() - start < 30
