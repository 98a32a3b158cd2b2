"""First start creates the admin with a generated password shown once; a restart reuses state;
Ctrl-C (SIGINT) stops hub, service and notebook servers. On the way, the README's "Add people"
commands run as written against this instance, whose data directory is not the checkout's
(issue 30): the running hub gets the person at once, a stopped one at its next start."""

from __future__ import annotations

import os
import re
import subprocess
import time

import psutil
import pytest
from stack import ROOT, Stack

from yitong_spawner import running

pytestmark = pytest.mark.e2e

SETTINGS = {
    "backend": "local",
    "hub": {"admin_users": ["root-admin"]},
    "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.5, "memory": "1Gi"}},
    "vcs": {"default": {"quota": {"cpu": 2, "memory": "4Gi"}, "groups": ["everyone"], "profiles": ["cpu"]}},
    "groups": {"everyone": ["root-admin"]},
}
PRINTED = re.compile(r"user:\s+root-admin\s+password:\s+(\S+)")
# README.md "Add people", as written: the running platform, and one stopped (or one of several)
README_ADD = ".venv/bin/yitong-passwd add alice --generate --vc default"
README_NAMED = "YITONG_DATA_DIR=/srv/yitong .venv/bin/yitong-passwd add alice --generate --vc default"


def readme_command(command: str, stack: Stack, name: str) -> subprocess.CompletedProcess:
    """A README command run in the checkout as an admin's shell has it (no YITONG_* variables),
    for `name` and with `/srv/yitong` standing for this instance's data directory."""
    readme = (ROOT / "README.md").read_text()
    assert f"`{command}`" in readme, f"README.md no longer says `{command}`"
    command = command.replace("alice", name).replace("/srv/yitong", str(stack.data_dir))
    env = {k: v for k, v in os.environ.items() if not k.startswith("YITONG_")}
    return subprocess.run(command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def printed_password(done: subprocess.CompletedProcess, name: str) -> str:
    assert done.returncode == 0, done.stderr
    [password] = re.findall(rf"^Password for {name}: (\S+)$", done.stdout, re.MULTILINE)
    return password


def add_to_running(stack: Stack, name: str) -> str:
    """README_ADD on the running instance. Where other platforms run from this checkout too (a
    developer's machine, other test sessions), it must refuse, naming them, and README_NAMED
    does it."""
    others = {h.data_dir for h in running.hubs_of(running.scan(), str(ROOT))} - {str(stack.data_dir)}
    done = readme_command(README_ADD, stack, name)
    if others:
        assert done.returncode == 2, done.stderr
        assert "platforms run from this checkout" in done.stderr and str(stack.data_dir) in done.stderr
        assert "nothing changed." in done.stderr
        done = readme_command(README_NAMED, stack, name)
    password = printed_password(done, name)
    assert f"{name} is now a hub user, in group everyone (VC default); data directory {stack.data_dir}" in done.stderr
    return password


def person_in_default(stack: Stack, admin_token: str, name: str) -> None:
    """`name` is a hub user in group everyone, logs in with their password and is in VC default."""
    with stack.hub(admin_token) as hub:
        assert hub.get(f"/users/{name}").json()["groups"] == ["everyone"]
    with stack.platform_client(stack.token(name)) as api:
        assert api.get("/me").json()["vcs"] == ["default"]


def test_first_start_prints_password_once_and_state_survives(tmp_path):
    stack = Stack(tmp_path, SETTINGS, passwords={})
    stack.start()
    try:
        found = PRINTED.findall(stack.log_path.read_text())
        assert len(found) == 1, stack.tail()
        stack.passwords["root-admin"] = found[0]
        token = stack.token("root-admin")
        stack.passwords["alice"] = add_to_running(stack, "alice")
        person_in_default(stack, token, "alice")
        with stack.hub(token) as hub:
            r = hub.post("/users/root-admin/server", json={})  # empty options: first profile
            assert r.status_code in (201, 202), r.text
            for _ in range(200):
                if hub.get("/users/root-admin").json()["servers"].get("", {}).get("ready"):
                    break
                time.sleep(0.3)
        children = psutil.Process(stack.proc.pid).children(recursive=True)
        assert any(
            "singleuser" in " ".join(c.cmdline()) or "jupyter" in " ".join(c.cmdline())
            for c in children
            if c.is_running()
        )
        assert stack.stop() == 0, stack.tail()
        alive = [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        assert not alive, f"left running after Ctrl-C: {alive}"

        done = readme_command(README_NAMED, stack, "bob")  # the platform stopped: at its next start
        stack.passwords["bob"] = printed_password(done, "bob")
        assert "bob becomes a hub user at the hub's next start (it is not running), in group everyone" in done.stderr

        stack.start()  # second start: same data directory
        assert len(PRINTED.findall(stack.log_path.read_text())) == 1, "password printed twice"
        with stack.platform_client(stack.token("root-admin")) as api:
            assert [vc["name"] for vc in api.get("/vcs").json()] == ["default"]
        person_in_default(stack, stack.token("root-admin"), "bob")
    finally:
        stack.stop()
