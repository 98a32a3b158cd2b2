"""A notebook server started through the real hub (root, multi-user) runs as the person's account,
and so does its terminal (the workspace's) and an SSH session into it through the gateway (a real
OpenSSH client).

Its own stack: a fresh hub user (unique name, so a unique ``yt<tag>-`` account, removed at teardown),
the data directory under ``/var/tmp`` (the accounts must reach their homes) and the hub started
with an interpreter every account can run (``shared_python``).
"""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from e2e.conftest import PROFILES
from shared_python import shared_bin
from stack import Stack

from yitong_services.core import cgroups
from yitong_services.core.accounts import account_name, instance_tag
from yitong_services.datasets import materialize
from yitong_services.vcs.quantities import parse_amount

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="multi-user mode needs a root hub (CI runs as root)"),
]


def _servers_of(user: str) -> list[int]:
    """Pids of processes whose environment names ``user`` as their JupyterHub user."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"JUPYTERHUB_USER={user}".encode() in env and b"JUPYTERHUB_API_TOKEN" in b"".join(env):
                found.append(int(entry.name))
    return found


def _status(pid: int) -> dict[str, str]:
    lines = (Path("/proc") / str(pid) / "status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def _in_terminal(base: str, token: str, out: Path, command: str) -> str:
    """Run ``command`` in a new terminal of the server at ``base`` (its REST API and terminado's
    websocket, as JupyterLab does), its output into ``out`` (in the account's home); the output."""
    import asyncio
    import json

    import httpx
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    headers = {"Authorization": f"token {token}"}
    r = httpx.post(base + "api/terminals", headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    url = base.replace("http://", "ws://") + f"terminals/websocket/{r.json()['name']}"

    async def send() -> None:
        conn = await websocket_connect(HTTPRequest(url, headers=headers))
        await conn.write_message(json.dumps(["stdin", f"{command} > {out}.tmp; mv {out}.tmp {out}\r"]))
        deadline = time.monotonic() + 60
        while not out.exists():
            assert time.monotonic() < deadline, "the terminal ran nothing"
            await asyncio.sleep(0.2)
        conn.close()

    asyncio.run(send())
    httpx.delete(base + f"api/terminals/{r.json()['name']}", headers=headers, timeout=60)
    return out.read_text()


def _ssh_into(stack: Stack, work: Path, user: str, command: str) -> subprocess.CompletedProcess:
    """``ssh <user>@gateway command`` with a key the person adds now (their own token)."""
    import httpx
    from ssh_helpers import key_pair

    path, line = key_pair(work, f"id_{user}")
    r = httpx.post(
        f"{stack.platform}/me/ssh-keys",
        json={"key": line},
        headers={"Authorization": f"token {stack.token(user)}"},
        timeout=60,
    )
    assert r.status_code == 201, r.text
    pub = (stack.data_dir / "ssh" / "ssh_host_ed25519_key.pub").read_text().split()
    (work / "known_hosts").write_text(f"[127.0.0.1]:{stack.ssh_port} {pub[0]} {pub[1]}\n")
    argv = ["ssh", "-F", "/dev/null", "-p", str(stack.ssh_port), "-i", str(path), "-o", "IdentitiesOnly=yes"]
    argv += [
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        f"UserKnownHostsFile={work / 'known_hosts'}",
    ]
    return subprocess.run([*argv, f"{user}@127.0.0.1", command], capture_output=True, text=True, timeout=90)


def test_a_notebook_server_runs_as_the_mapped_account():
    tag = secrets.token_hex(3)
    user, admin = f"nb{tag}", f"ad{tag}"  # unique: the platform creates an account for each who logs in
    work = Path(tempfile.mkdtemp(prefix="yitong-nb-", dir="/var/tmp"))
    work.chmod(0o711)
    settings = {
        "backend": "local",
        "hub": {"admin_users": [admin]},
        "backends": {"local": {"inventory": {}, "mode": "multi-user"}},
        "profiles": {"cpu-small": PROFILES["cpu-small"]},
        "vcs": {"team": {"quota": {"cpu": 2, "memory": "4Gi"}, "groups": ["team"], "profiles": ["cpu-small"]}},
        "groups": {"team": [user]},
        "ssh": {},  # the gateway on a port of its own (stack.ssh_port)
    }
    stack = Stack(work, settings, {admin: "admin-pw-cf", user: "user-pw-cf"})
    stack.bin_dir = shared_bin()
    try:
        stack.start()
        token = stack.token(admin)
        with stack.hub(token) as hub:
            r = hub.post(f"/users/{user}/server", json={"vc": "team", "profile": "cpu-small"})
            assert r.status_code in (201, 202), r.text
        stack.wait_ready(token, user, timeout=120)
        name = account_name(user, instance_tag(os.path.realpath(stack.data_dir)))
        account = pwd.getpwnam(name)
        deadline = time.monotonic() + 10
        while not (pids := _servers_of(user)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pids, stack.tail()
        for pid in pids:
            try:
                status = _status(pid)
            except FileNotFoundError:  # a process that ended since the scan (not the server)
                continue
            assert status["Uid"].split() == [str(account.pw_uid)] * 4, status
            assert status["Gid"].split() == [str(account.pw_gid)] * 4, status
            assert status["Groups"] == "", status
        # in a cgroup of its own (core/cgroups.py) with the profile's memory as its limit
        layout = cgroups.detect()
        if layout.kind != "none":
            dirs = cgroups.dirs_of(layout, cgroups.parent_name(stack.data_dir), f"server-{user}")
            assert set(pids) <= cgroups.members(dirs), (pids, dirs)
            assert cgroups.memory_limit(dirs) == parse_amount("memory", PROFILES["cpu-small"]["memory"])
        assert account.pw_uid != 0 and account.pw_name == name
        home = stack.data_dir / "home" / user
        assert os.stat(home).st_uid == account.pw_uid and oct(os.stat(home).st_mode & 0o777) == "0o700"
        # the workspace's terminal (JupyterLab's, the SSH gateway's way in) is the account's too, in the server's cgroup
        base = stack.url + stack.wait_ready(token, user)["url"]
        said = _in_terminal(base, token, home / "term.txt", "{ id -u; id -G | wc -w; cat /proc/self/cgroup; }")
        lines = said.split()
        assert lines[:2] == [str(account.pw_uid), "1"], said
        if layout.kind != "none":
            assert f"/{cgroups.parent_name(stack.data_dir)}/server-{user}" in said, said
        # and SSH into the server (a real OpenSSH client through the gateway) lands there as the account
        r = _ssh_into(stack, work, user, "id -u; id -G | wc -w")
        assert r.returncode == 0 and r.stdout.split() == [str(account.pw_uid), "1"], (r.stdout, r.stderr)
        stack.stop_server(token, user)
        if layout.kind != "none":  # killed as a whole and removed once the hub saw it end
            deadline = time.monotonic() + 30
            while any(os.path.exists(d) for d in dirs) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not any(os.path.exists(d) for d in dirs), dirs
    finally:
        stack.stop()
        for entry in pwd.getpwall():  # every account this stack created (homes under its data directory)
            if entry.pw_name.startswith("yt") and entry.pw_dir.startswith(str(work) + "/"):
                subprocess.run(["userdel", entry.pw_name], capture_output=True, check=False)
        materialize.remove_tree(work)
