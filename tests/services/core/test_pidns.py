"""PID namespaces (core/pidns.py, docs/security.md "Processes and accounts"): another person's
processes and command lines are invisible from a job.

The attack test starts the platform service as root in multi-user mode (``MultiUser`` of
test_confinement.py) and a process of the victim's account whose command line holds a secret;
the attacker's job lists ``/proc``, runs ``ps`` and reads the victim's ``/proc/<pid>/cmdline``.
The same job with ``backends.local.pid_namespaces: false`` sees the victim (the attack is real:
without the protection the test's assertions fail).
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import signal
import subprocess
import time

import pytest
from shared_python import shared_bin

from tests.services.core.test_confinement import MultiUser, needs_root
from yitong_services.core import pidns

# ---- pure ---------------------------------------------------------------------------------

MOUNTINFO = """\
22 27 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
23 27 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw{opts}
24 23 0:23 / /proc/sys/fs/binfmt_misc rw,relatime shared:14 - autofs systemd-1 rw,fd=29
"""


@pytest.mark.parametrize(
    "host, kept",
    [
        ("", ""),
        (",hidepid=invisible,gid=27", "hidepid=invisible,gid=27"),
        (",hidepid=2", "hidepid=2"),
        (",subset=pid,hidepid=invisible", "subset=pid,hidepid=invisible"),
    ],
)
def test_a_new_proc_keeps_the_hosts_hidepid(host, kept):
    assert pidns.proc_options(MOUNTINFO.format(opts=host)) == kept


def test_the_last_proc_mounted_on_proc_counts():
    text = MOUNTINFO.format(opts="") + "40 23 0:40 / /proc rw - proc proc rw,hidepid=invisible\n"
    assert pidns.proc_options(text) == "hidepid=invisible"


# ---- real: a process split into an anchor and a namespace's PID 1 ---------------------------

# as root: become nobody in a namespace of its own; report what is seen; leave an orphan behind
SPLIT = r"""
import json, os, sys, time
sys.path.append(sys.argv[1])
from yitong_services.core import pidns
os.setsid()
def become():
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
anchor = pidns.enter(become)
seen = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
if os.fork() == 0:  # an orphan in a session of its own: it must not outlive PID 1
    os.setsid()
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", sys.argv[2]])
while len([n for n in os.listdir("/proc") if n.isdigit()]) < 2:
    time.sleep(0.01)
time.sleep(0.5)  # it has exec-ed
print(json.dumps({"pid": os.getpid(), "uid": os.getuid(), "anchor": anchor, "seen": seen}), flush=True)
pidns.end(7)
"""


@needs_root
def test_the_anchor_is_tracked_and_nothing_outlives_pid_1(tmp_path):
    from yitong_services.jobs.runner_local import SERVICES_ROOT

    mark = f"yt-orphan-{secrets.token_hex(4)}"
    proc = subprocess.run(
        [shared_bin() / "python", "-c", SPLIT, SERVICES_ROOT, mark], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 7, proc.stderr  # the anchor exits as PID 1 did
    report = json.loads(proc.stdout)
    assert report["pid"] == 1 and report["uid"] == 65534 and report["seen"] == [1]
    anchor_pid, _ticks = report["anchor"]
    assert anchor_pid != 1  # the host's pid: what a service tracks
    # the orphan (pid 2 inside) is gone with PID 1: no process of nobody's runs `sleep` from SPLIT
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-u", "nobody", "-f", mark], capture_output=True, text=True).stdout
    assert left.strip() == ""


# ---- real: a hostile job, as one person against another -------------------------------------

SNOOP = r"""
import json, os, subprocess, sys
victim_pid, secret = int(sys.argv[1]), sys.argv[2][::-1]  # reversed: not in this job's own argv
me = os.getuid()
others = []
for name in os.listdir("/proc"):
    if name.isdigit():
        try:
            uid = os.stat(f"/proc/{name}").st_uid
        except OSError:
            continue
        if uid != me:
            others.append(int(name))
try:
    cmdline = open(f"/proc/{victim_pid}/cmdline", "rb").read().decode(errors="replace")
except OSError as e:
    cmdline = f"denied {e.errno}"
ps = subprocess.run(["ps", "-eo", "uid,args"], capture_output=True, text=True).stdout
report = {"others": others, "cmdline_leaks": secret in cmdline, "ps_leaks": secret in ps, "pid": os.getpid()}
print("REPORT " + json.dumps(report), flush=True)
"""


def _victim_process(mu: MultiUser, victim: str, secret: str) -> subprocess.Popen:
    account = mu.call(victim, "GET", "spawn-options").json()["account"]  # created on first use
    entry = pwd.getpwnam(account["name"])
    return subprocess.Popen(
        [shared_bin() / "python", "-c", "import time; time.sleep(600)", f"--token={secret}"],
        user=entry.pw_uid,
        group=entry.pw_gid,
        extra_groups=[],
        cwd="/",
        start_new_session=True,
    )


def _snoop(mu: MultiUser, attacker: str, victim: subprocess.Popen, secret: str) -> dict:
    job = mu.submit(attacker, {"name": "snoop", "command": ["python", "-c", SNOOP, str(victim.pid), secret[::-1]]})
    log = mu.call(attacker, "GET", f"jobs/{job['id']}/logs?rank=0").text
    assert job["state"] == "succeeded", (job, log, mu.log.read_text()[-2000:])
    return json.loads(log.split("REPORT ", 1)[1])


def _run(hub, tmp_path, isolate: bool) -> dict:
    local = {"inventory": {}, "mode": "multi-user", "pid_namespaces": isolate}
    mu = MultiUser(hub, tmp_path, backends={"local": local})
    secret = secrets.token_hex(12)
    victim = None
    try:
        mu.start()
        attacker, victim_name = mu.users
        victim = _victim_process(mu, victim_name, secret)
        return _snoop(mu, attacker, victim, secret)
    finally:
        if victim is not None:
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait()
        mu.stop()


@needs_root
def test_a_job_sees_no_one_elses_processes(hub, tmp_path):
    report = _run(hub, tmp_path, isolate=True)
    assert report["others"] == [], "the job sees processes of other accounts"
    assert not report["cmdline_leaks"], "the job read another person's command line"
    assert not report["ps_leaks"], "ps in the job shows another person's command line"
    assert report["pid"] > 1  # the job's program is not its namespace's init (the wrapper is)


@needs_root
def test_without_pid_namespaces_a_job_reads_another_persons_command_line(hub, tmp_path):
    """The control: with the protection off the same job does see the victim, so the test above
    fails without it."""
    report = _run(hub, tmp_path, isolate=False)
    assert report["others"] and report["cmdline_leaks"] and report["ps_leaks"]


@needs_root
def test_a_wrapper_started_without_the_fork_server_is_isolated_too(tmp_path):
    """``launcher.LAUNCH_AS`` (the runner's fallback when the fork server cannot start): started as
    root, it drops to the account in a namespace of its own; the pid file names its anchor."""
    import shutil
    import tempfile
    from pathlib import Path

    from yitong_services.jobs import launcher
    from yitong_services.jobs.runner_local import SERVICES_ROOT, read_exit, read_pid

    base = Path(tempfile.mkdtemp(prefix="yitong-pidns-", dir="/var/tmp"))  # the account reaches it
    base.chmod(0o711)
    job = base / "job"
    job.mkdir()
    os.chown(job, 65534, 65534)
    here = job / "attempt-0"
    argv = [shared_bin() / "python", "-I", "-S", "-c", launcher.LAUNCH_AS, SERVICES_ROOT, "65534", "65534", "1"]
    argv += [str(here), "0", "--", "/bin/sh", "-c", "id -u; ls /proc | grep -c '^[0-9]'"]
    try:
        proc = subprocess.Popen(argv, cwd=job, start_new_session=True, env={"PATH": "/usr/bin:/bin"})
        assert proc.wait(60) == 0
        pid, _started = read_pid(here)
        assert pid == proc.pid  # the anchor: what the runner tracks and signals
        assert read_exit(here)["exit_code"] == 0
        uid, count = (here / "launcher.log").read_text().split()
        assert uid == "65534" and int(count) <= 4  # the wrapper, sh, ls, grep: nothing of the host's
    finally:
        shutil.rmtree(base, ignore_errors=True)
