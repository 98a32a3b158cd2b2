"""From a notebook's kernel (a real server through the real hub, root, multi-user) another
person's processes and command lines are invisible: the server runs in a PID namespace of its own
(core/pidns.py, docs/security.md "Processes and accounts").

The victim is a process of another account (``nobody``) with a secret in its command line; the
kernel lists ``/proc``, reads the victim's ``/proc/<pid>/cmdline`` and runs ``ps``, and writes
what it saw into its home. The control run with ``backends.local.pid_namespaces: false`` sees the
secret (the attack is real: without the protection the first case fails).
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from e2e.conftest import PROFILES
from e2e.test_console import execute
from shared_python import shared_bin
from stack import Stack

from yitong_services.datasets import materialize

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="multi-user mode needs a root hub (CI runs as root)"),
]

SNOOP = r"""
import json, os, subprocess
me, victim, secret = os.getuid(), {victim}, {reversed_secret!r}[::-1]
others = []
for name in os.listdir("/proc"):
    if name.isdigit():
        try:
            if os.stat("/proc/" + name).st_uid != me:
                others.append(int(name))
        except OSError:
            pass
try:
    cmdline = open(f"/proc/{{victim}}/cmdline", "rb").read().decode(errors="replace")
except OSError as e:
    cmdline = "denied"
ps = subprocess.run(["ps", "-eo", "uid,args"], capture_output=True, text=True).stdout
report = {{"others": others, "cmdline": secret in cmdline, "ps": secret in ps, "pid": os.getpid()}}
with open(os.path.join(os.environ["HOME"], "report.json.tmp"), "w") as f:
    json.dump(report, f)
os.rename(os.path.join(os.environ["HOME"], "report.json.tmp"), os.path.join(os.environ["HOME"], "report.json"))
"""


@pytest.mark.parametrize("isolate", [True, False], ids=["pid-namespaces", "control-without"])
def test_a_kernel_sees_no_one_elses_processes(isolate):
    tag = secrets.token_hex(3)
    user, admin = f"pn{tag}", f"ad{tag}"
    work = Path(tempfile.mkdtemp(prefix="yitong-pn-", dir="/var/tmp"))
    work.chmod(0o711)
    settings = {
        "backend": "local",
        "hub": {"admin_users": [admin]},
        "backends": {"local": {"inventory": {}, "mode": "multi-user", "pid_namespaces": isolate}},
        "profiles": {"cpu-small": PROFILES["cpu-small"]},
        "vcs": {"team": {"quota": {"cpu": 2, "memory": "4Gi"}, "groups": ["team"], "profiles": ["cpu-small"]}},
        "groups": {"team": [user]},
    }
    secret = secrets.token_hex(12)
    nobody = pwd.getpwnam("nobody")
    victim = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", f"--token={secret}"],
        user=nobody.pw_uid,
        group=nobody.pw_gid,
        extra_groups=[],
        cwd="/",
        start_new_session=True,
    )
    stack = Stack(work, settings, {admin: "admin-pw-pn", user: "user-pw-pn"})
    stack.bin_dir = shared_bin()
    try:
        stack.start()
        token = stack.token(admin)
        with stack.hub(token) as hub:
            r = hub.post(f"/users/{user}/server", json={"vc": "team", "profile": "cpu-small"})
            assert r.status_code in (201, 202), r.text
        base = stack.url + stack.wait_ready(token, user, timeout=120)["url"]
        headers = {"Authorization": f"token {token}"}
        kernel = httpx.post(base + "api/kernels", json={"name": "python3"}, headers=headers, timeout=60)
        assert kernel.status_code == 201, kernel.text
        ws = base.replace("http://", "ws://") + f"api/kernels/{kernel.json()['id']}/channels"
        execute(ws, token, SNOOP.format(victim=victim.pid, reversed_secret=secret[::-1]))
        report_file = stack.data_dir / "home" / user / "report.json"
        deadline = time.monotonic() + 60
        while not report_file.exists():
            assert time.monotonic() < deadline, stack.tail()
            time.sleep(0.2)
        report = json.loads(report_file.read_text())
        if isolate:
            assert report["others"] == [], "the kernel sees processes of other accounts"
            assert not report["cmdline"], "the kernel read another person's command line"
            assert not report["ps"], "ps in the kernel shows another person's command line"
        else:
            assert report["others"] and report["cmdline"] and report["ps"], report
        stack.stop_server(token, user)
    finally:
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        stack.stop()
        for entry in pwd.getpwall():  # every account this stack created (homes under its data directory)
            if entry.pw_name.startswith("yt") and entry.pw_dir.startswith(str(work) + "/"):
                subprocess.run(["userdel", entry.pw_name], capture_output=True, check=False)
        materialize.remove_tree(work)
