"""First start creates the admin with a generated password shown once; a restart reuses state;
Ctrl-C (SIGINT) stops hub, service and notebook servers."""

from __future__ import annotations

import re
import time

import psutil
import pytest
from stack import Stack

pytestmark = pytest.mark.e2e

SETTINGS = {
    "backend": "local",
    "hub": {"admin_users": ["root-admin"]},
    "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.5, "memory": "1Gi"}},
    "vcs": {"default": {"quota": {"cpu": 2, "memory": "4Gi"}, "groups": ["everyone"], "profiles": ["cpu"]}},
    "groups": {"everyone": ["root-admin"]},
}
PRINTED = re.compile(r"user:\s+root-admin\s+password:\s+(\S+)")


def test_first_start_prints_password_once_and_state_survives(tmp_path):
    stack = Stack(tmp_path, SETTINGS, passwords={})
    stack.start()
    try:
        found = PRINTED.findall(stack.log_path.read_text())
        assert len(found) == 1, stack.tail()
        stack.passwords["root-admin"] = found[0]
        token = stack.token("root-admin")
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

        stack.start()  # second start: same data directory
        assert len(PRINTED.findall(stack.log_path.read_text())) == 1, "password printed twice"
        with stack.platform_client(stack.token("root-admin")) as api:
            assert [vc["name"] for vc in api.get("/vcs").json()] == ["default"]
    finally:
        stack.stop()
