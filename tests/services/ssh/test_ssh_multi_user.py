"""SSH into a local job on a multi-user machine: the platform service runs as root (a real
process, ``MultiUser`` from the confinement tests) and the shell runs as the job owner's
account, without supplementary groups; another person's login does not reach it. The shell
runs in the job's own PID namespace (core/pidns.py): it sees the job's processes and no one
else's, and it enters the worker's folder as the account, never as root."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import time

import pytest
from helpers import free_port
from shared_python import shared_bin
from ssh_helpers import key_pair

from tests.services.core.test_confinement import MultiUser
from yitong_services.core import cgroups

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="multi-user mode needs root (CI runs as root)"),
    pytest.mark.skipif(not shutil.which("ssh"), reason="no OpenSSH client"),
]


@pytest.fixture
def db_url(tmp_path):
    return f"sqlite:///{tmp_path / 'yitong.sqlite'}"


class Gate:
    """A multi-user service with its SSH gateway, a key for each of its two people."""

    def __init__(self, hub, tmp_path, **local) -> None:
        self.port = free_port()
        backends = {"local": {"inventory": {}, "mode": "multi-user", **local}}
        self.mu = MultiUser(hub, tmp_path, ssh={"port": self.port}, backends=backends)
        self.tmp = tmp_path

    def start(self) -> Gate:
        mu = self.mu
        mu.start()
        self.keys = {}
        for who in mu.users:
            path, line = key_pair(self.tmp, f"id_{who}")
            assert mu.call(who, "POST", "me/ssh-keys", json={"key": line}).status_code == 201
            self.keys[who] = path
        info = mu.call(mu.users[0], "GET", "ssh").json()
        self.known = self.tmp / "known_hosts"
        self.known.write_text(f"[127.0.0.1]:{self.port} {info['host_key']}\n")
        return self

    def running_job(self, who: str, code: str) -> dict:
        body = {"name": "sleeper", "vc": "default", "environment": {"kernel": "python3"}, "cpu": 0.1}
        body |= {"memory": "64Mi", "command": ["/usr/bin/python3", "-c", code]}
        job = self.mu.call(who, "POST", "jobs", json=body).json()
        deadline = time.monotonic() + 60
        while self.mu.call(who, "GET", f"jobs/{job['id']}").json()["state"] != "running":
            assert time.monotonic() < deadline, self.mu.log.read_text()[-2000:]
            time.sleep(0.2)
        return job

    def ssh_argv(self, who: str, login: str, command: str, *options: str) -> list[str]:
        argv = ["ssh", "-F", "/dev/null", "-p", str(self.port), "-i", str(self.keys[who]), "-o", "IdentitiesOnly=yes"]
        argv += ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={self.known}"]
        return [*argv, *options, f"{login}@127.0.0.1", command]

    def ssh(self, who: str, login: str, command: str) -> subprocess.CompletedProcess:
        return subprocess.run(self.ssh_argv(who, login, command), capture_output=True, text=True, timeout=60)

    def ssh_worker(self, who: str, job: dict, command: str) -> subprocess.CompletedProcess:
        for _ in range(300):  # the worker process appears a moment after the wrapper
            r = self.ssh(who, f"{who}+job.{job['id']}", command)
            if "no running worker" not in r.stderr:
                return r
            time.sleep(0.1)
        return r


def test_job_shell_runs_as_the_owners_account(hub, tmp_path):
    gate = Gate(hub, tmp_path)
    mu = gate.mu
    try:
        gate.start()
        owner, other = mu.users
        job = gate.running_job(owner, "import time; time.sleep(120)")
        r = gate.ssh_worker(owner, job, "whoami; pwd; id -G | wc -w")
        assert r.returncode == 0, (r.stderr, mu.log.read_text()[-3000:])
        account = mu.call(owner, "GET", "spawn-options").json()["account"]["name"]
        assert r.stdout.split() == [account, str(mu.data / "jobs" / str(job["id"])), "1"]
        r = gate.ssh(other, f"{other}+job.{job['id']}", "true")
        assert r.returncode == 255 and f"{other} has no job {job['id']}" in r.stderr
        mu.call(owner, "POST", f"jobs/{job['id']}/cancel")
    finally:
        mu.stop()


def test_the_shell_enters_the_workers_folder_as_the_account(hub, tmp_path):
    """The worker sits in a folder of its own it has made unenterable (mode 0): root could enter
    it, the account cannot, so the shell does not start (it used to: the folder was entered
    before the drop to the account)."""
    gate = Gate(hub, tmp_path)
    try:
        gate.start()
        owner = gate.mu.users[0]
        code = "import os, time; os.mkdir('locked'); os.chdir('locked'); os.chmod('.', 0); time.sleep(120)"
        job = gate.running_job(owner, code)
        r = gate.ssh_worker(owner, job, "pwd")
        assert r.returncode == 255, (r.stdout, r.stderr)
        assert "the shell cannot start in" in r.stderr and "locked" in r.stderr
        gate.mu.call(owner, "POST", f"jobs/{job['id']}/cancel")
    finally:
        gate.mu.stop()


# what the SSH shell sees: its own account's processes only, the job's program among them
SNOOP = (
    "python3 -c 'import os; me = os.getuid(); "
    'print("OTHERS", sum(1 for n in os.listdir("/proc") if n.isdigit() and os.stat("/proc/" + n).st_uid != me))\'; '
    "cat /proc/{victim}/cmdline 2>/dev/null | tr -d '\\0' | rev; echo; ps -eo args | rev"
)


def _victim(mu: MultiUser, secret: str) -> subprocess.Popen:
    victim = mu.users[1]
    entry = pwd.getpwnam(mu.call(victim, "GET", "spawn-options").json()["account"]["name"])
    return subprocess.Popen(
        [shared_bin() / "python", "-c", "import time; time.sleep(600)", f"--token={secret}"],
        user=entry.pw_uid,
        group=entry.pw_gid,
        extra_groups=[],
        cwd="/",
        start_new_session=True,
    )


@pytest.mark.parametrize("isolate", [True, False], ids=["pid-namespaces", "control-without"])
def test_an_ssh_shell_sees_no_one_elses_processes(hub, tmp_path, isolate):
    """From an SSH shell into their job, one person lists /proc, reads the other's command line
    and runs ps: nothing of the other's shows, the job's own program does. The control run
    without ``pid_namespaces`` sees the other's secret (the attack is real)."""
    gate = Gate(hub, tmp_path, pid_namespaces=isolate)
    secret = secrets.token_hex(12)
    victim = None
    try:
        gate.start()
        owner = gate.mu.users[0]
        victim = _victim(gate.mu, secret)
        job = gate.running_job(owner, "import time; time.sleep(120)  # the-jobs-own")
        r = gate.ssh_worker(owner, job, SNOOP.format(victim=victim.pid))
        assert r.returncode == 0, r.stderr
        # the secret is looked for reversed (rev), so the shell's own command line never holds it
        leaked = secret[::-1] in r.stdout
        others = int(r.stdout.split("OTHERS ", 1)[1].split()[0])
        if isolate:
            assert not leaked and others == 0, r.stdout
            assert "the-jobs-own"[::-1] in r.stdout, r.stdout  # the shell is beside the job's processes
        else:
            assert leaked and others > 0, r.stdout
        gate.mu.call(owner, "POST", f"jobs/{job['id']}/cancel")
    finally:
        if victim is not None:
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait()
        gate.mu.stop()


# the shell's memory cgroup (v1 ``N:memory:/path``, v2 ``0::/path``), then a 256 MiB hog
CGROUP = "grep -E '^[0-9]+:(memory:|:)' /proc/self/cgroup | head -1 | cut -d: -f3"
HOG = '/usr/bin/python3 -c \'b = b"x" * (256 << 20); print("HELD", len(b))\''


@pytest.mark.skipif(cgroups.detect().kind == "none", reason="no cgroups on this host")
@pytest.mark.parametrize("isolate", [True, False], ids=["pid-namespaces", "cgroups-alone"])
def test_an_ssh_shell_is_held_to_the_jobs_limits(hub, tmp_path, isolate):
    """An SSH shell into a 64Mi job runs in the job attempt's cgroup: a 256 MiB hog started from
    it is stopped by the kernel (exit 137), as the job's own would be, and what the shell left
    running in a session of its own ends with the job (the cgroup's kill reaches it; without PID
    namespaces nothing else would). Fails without the join (checked by hand): the shell sits in
    the service's cgroup, the hog prints HELD and the sleepers outlive the job."""
    gate = Gate(hub, tmp_path, pid_namespaces=isolate)
    try:
        gate.start()
        owner = gate.mu.users[0]
        job = gate.running_job(owner, "import time; time.sleep(120)")
        r = gate.ssh_worker(owner, job, CGROUP)
        assert r.returncode == 0, (r.stderr, gate.mu.log.read_text()[-3000:])
        parent = cgroups.parent_name(gate.mu.data.absolute())
        assert r.stdout.strip() == f"/{parent}/job-{job['id']}-1", r.stdout
        r = gate.ssh_worker(owner, job, HOG)
        assert "HELD" not in r.stdout and r.returncode == 137, (r.returncode, r.stdout, r.stderr)
        # a shell left running (its own session, as setsid would make) ends with the job
        argv = gate.ssh_argv(owner, f"{owner}+job.{job['id']}", "setsid sleep 300 & sleep 300")
        shell = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        dirs = cgroups.dirs_of(cgroups.detect(), parent, f"job-{job['id']}-1")
        deadline = time.monotonic() + 30
        while not _sleepers(cgroups.members(dirs)) >= 2:
            assert time.monotonic() < deadline and shell.poll() is None, shell.stderr and shell.stderr.read()
            time.sleep(0.1)
        sleepers = {p for p in cgroups.members(dirs) if _cmdline(p) == "sleep 300"}
        gate.mu.call(owner, "POST", f"jobs/{job['id']}/cancel")
        shell.wait(timeout=60)
        deadline = time.monotonic() + 30
        while any(os.path.exists(f"/proc/{p}") and _cmdline(p) == "sleep 300" for p in sleepers):
            assert time.monotonic() < deadline, "the SSH shell's processes outlived the job"
            time.sleep(0.1)
    finally:
        gate.mu.stop()


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def _sleepers(pids: set[int]) -> int:
    return sum(1 for p in pids if _cmdline(p) == "sleep 300")


def _serve_as(mu: MultiUser, who: str, port: int, text: str) -> subprocess.Popen:
    """An HTTP server on 127.0.0.1:``port`` run by ``who``'s account, answering ``text``."""
    entry = pwd.getpwnam(mu.call(who, "GET", "spawn-options").json()["account"]["name"])
    code = (
        "import http.server, sys\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.end_headers(); self.wfile.write(sys.argv[2].encode())\n"
        "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
    )
    proc = subprocess.Popen(
        [shared_bin() / "python", "-c", code, str(port), text],
        user=entry.pw_uid,
        group=entry.pw_gid,
        extra_groups=[],
        cwd="/",
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return proc
        assert time.monotonic() < deadline and proc.poll() is None, "the account's server did not start"
        time.sleep(0.1)


def _get(port: int) -> str:
    """What an HTTP GET through the local end of a forward reads ("" when the forward is closed)."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        s.settimeout(10)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data.decode(errors="replace")
    return ""


def test_port_forwarding_reaches_only_the_persons_own_ports(hub, tmp_path):
    """With a real ``ssh -L``, one person forwards to their own service on localhost (VS Code
    Remote-SSH, TensorBoard): it answers. Forwards to the other person's service, the platform's
    own port (root's), a port nothing listens on and another host are refused with a sentence
    and read nothing; ``ssh -R`` is refused. Fails without the owner check (checked by hand):
    the other person's service answers through the forward."""
    gate = Gate(hub, tmp_path)
    mu = gate.mu
    servers: list[subprocess.Popen] = []
    tunnel = None
    try:
        gate.start()
        owner, other = mu.users
        mine, theirs, nothing = free_port(), free_port(), free_port()
        servers += [_serve_as(mu, owner, mine, "MINE"), _serve_as(mu, other, theirs, "THEIRS")]
        local = {name: free_port() for name in ("mine", "theirs", "service", "nothing", "elsewhere")}
        forwards = {
            "mine": f"localhost:{mine}",
            "theirs": f"127.0.0.1:{theirs}",
            "service": f"127.0.0.1:{mu.port}",
            "nothing": f"localhost:{nothing}",
            "elsewhere": f"192.0.2.1:{mine}",  # TEST-NET-1: never reached
        }
        options = [o for name, to in forwards.items() for o in ("-L", f"127.0.0.1:{local[name]}:{to}")]
        options += ["-N", "-o", "ExitOnForwardFailure=yes"]
        argv = gate.ssh_argv(owner, owner, "", *options)[:-1]
        tunnel = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while "MINE" not in _get(local["mine"]):
            assert time.monotonic() < deadline and tunnel.poll() is None, tunnel.stderr and tunnel.stderr.read()
            time.sleep(0.2)
        for name in ("theirs", "service", "nothing", "elsewhere"):
            got = _get(local[name])
            assert "THEIRS" not in got and "HTTP" not in got, (name, got)
        # a remote forward is refused (the client exits, ExitOnForwardFailure)
        remote = gate.ssh_argv(
            owner, owner, "", "-N", "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:0:localhost:22"
        )
        r = subprocess.run(remote[:-1], capture_output=True, text=True, timeout=60)
        assert r.returncode == 255 and "remote port forwarding failed" in r.stderr, r.stderr
        tunnel.terminate()
        said = tunnel.communicate(timeout=30)[1]
        assert f"localhost port {theirs} is not yours: another account listens on it" in said, said
        assert f"localhost port {mu.port} is not yours" in said, said
        assert f"nothing listens on localhost port {nothing}" in said, said
        assert "forwarding reaches only your own services on localhost, not '192.0.2.1'" in said, said
    finally:
        if tunnel is not None and tunnel.poll() is None:
            tunnel.kill()
        for proc in servers:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        mu.stop()
