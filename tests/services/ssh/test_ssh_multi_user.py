"""SSH into a local job on a multi-user machine: the platform service runs as root (a real
process, ``MultiUser`` from the confinement tests) and the shell runs as the job owner's
``yt-<name>`` account, without supplementary groups; another person's login does not reach it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
from helpers import free_port
from ssh_helpers import key_pair

from tests.services.core.test_confinement import MultiUser
from yitong_services.core.accounts import account_name

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="multi-user mode needs root (CI runs as root)"),
    pytest.mark.skipif(not shutil.which("ssh"), reason="no OpenSSH client"),
]


@pytest.fixture
def db_url(tmp_path):
    return f"sqlite:///{tmp_path / 'yitong.sqlite'}"


def test_job_shell_runs_as_the_owners_account(hub, tmp_path):
    port = free_port()
    mu = MultiUser(hub, tmp_path, ssh={"port": port})
    try:
        mu.start()
        owner, other = mu.users
        keys = {}
        for who in mu.users:
            path, line = key_pair(tmp_path, f"id_{who}")
            assert mu.call(who, "POST", "me/ssh-keys", json={"key": line}).status_code == 201
            keys[who] = path
        info = mu.call(owner, "GET", "ssh").json()
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{port} {info['host_key']}\n")
        body = {"name": "sleeper", "vc": "default", "environment": {"kernel": "python3"}, "cpu": 0.1}
        body |= {"memory": "64Mi", "command": ["/usr/bin/python3", "-c", "import time; time.sleep(120)"]}
        job = mu.call(owner, "POST", "jobs", json=body).json()
        deadline = time.monotonic() + 60
        while mu.call(owner, "GET", f"jobs/{job['id']}").json()["state"] != "running":
            assert time.monotonic() < deadline, mu.log.read_text()[-2000:]
            time.sleep(0.2)

        def ssh(who: str, login: str, command: str) -> subprocess.CompletedProcess:
            argv = ["ssh", "-F", "/dev/null", "-p", str(port), "-i", str(keys[who]), "-o", "IdentitiesOnly=yes"]
            argv += ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known}"]
            return subprocess.run([*argv, f"{login}@127.0.0.1", command], capture_output=True, text=True, timeout=60)

        for _ in range(300):  # the worker process appears a moment after the wrapper
            r = ssh(owner, f"{owner}+job.{job['id']}", "whoami; pwd; id -G | wc -w")
            if "no running worker" not in r.stderr:
                break
            time.sleep(0.1)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [account_name(owner), str(mu.data / "jobs" / str(job["id"])), "1"]
        r = ssh(other, f"{other}+job.{job['id']}", "true")
        assert r.returncode == 255 and f"{other} has no job {job['id']}" in r.stderr
        mu.call(owner, "POST", f"jobs/{job['id']}/cancel")
    finally:
        mu.stop()
