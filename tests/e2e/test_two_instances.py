"""Two platforms from one checkout: different data directories and ports, the same working
directory (as two `make run` with their own DATA_DIR and ports). Neither writes into the
working directory, stopping one leaves the other serving, and Ctrl-C logs no error. Multi-user
(as root), the same person gets an account of each platform's own, never a shared one."""

from __future__ import annotations

import os
import pwd
import re
import secrets
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest
from shared_python import shared_bin
from stack import Stack

from yitong_services.core.accounts import account_name, instance_tag
from yitong_services.datasets import materialize

pytestmark = pytest.mark.e2e


def settings() -> dict:
    return {
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        "backends": {"local": {"mode": "single-person"}},
        "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.1, "memory": "256Mi"}},
        "vcs": {"team": {"quota": {"cpu": 4, "memory": "4Gi"}, "groups": ["team"], "profiles": ["cpu"]}},
        "groups": {"team": ["admin", "ann"]},
    }


def test_two_instances_side_by_side(tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    one = Stack(tmp_path / "one", settings(), {"admin": secrets.token_hex(8)}, cwd=checkout)
    two = Stack(tmp_path / "two", settings(), {"admin": secrets.token_hex(8)}, cwd=checkout)
    for stack in (one, two):
        stack.workdir.mkdir()
    one.start()
    try:
        two.start()
        try:
            tokens = {stack: stack.token("admin") for stack in (one, two)}
            for stack, token in tokens.items():
                with stack.hub(token) as hub:
                    r = hub.post("/users/ann/server", json={"vc": "team", "profile": "cpu"})
                    assert r.status_code in (201, 202), r.text
                stack.wait_ready(token, "ann")
            assert one.stop() == 0
            # the other's proxy, hub and server are untouched by the first one's shutdown
            r = httpx.get(f"{two.url}/user/ann/api", headers={"Authorization": f"token {tokens[two]}"}, timeout=10)
            assert r.status_code == 200 and "version" in r.json()
            with two.platform_client(tokens[two]) as api:
                assert api.get("/health").status_code == 200
            two.stop_server(tokens[two], "ann")
        finally:
            two.stop()
    finally:
        one.stop()
    assert list(checkout.iterdir()) == []  # everything went under each data directory
    for stack in (one, two):
        log = stack.log_path.read_text(errors="replace")
        errors = [line for line in log.splitlines() if re.match(r"\[E ", line) or " ERROR " in line]
        assert not errors, "\n".join(errors)


@pytest.mark.skipif(os.geteuid() != 0, reason="multi-user mode needs a root hub (CI runs as root)")
def test_two_multi_user_instances_never_share_an_account():
    """Two multi-user platforms on one host (root), the same person on both: each platform names
    its accounts with its own tag (core/accounts.py), so ann's two servers run as two accounts,
    each with its home in its own platform's data directory."""
    work = Path(tempfile.mkdtemp(prefix="yitong-two-", dir="/var/tmp"))  # the accounts reach it
    work.chmod(0o711)
    multi = settings()
    multi["backends"] = {"local": {"inventory": {}, "mode": "multi-user"}}
    stacks = [Stack(work / name, multi, {"admin": secrets.token_hex(8)}) for name in ("one", "two")]
    accounts = []
    try:
        for stack in stacks:
            stack.bin_dir = shared_bin()
            stack.start()
            token = stack.token("admin")
            with stack.hub(token) as hub:
                r = hub.post("/users/ann/server", json={"vc": "team", "profile": "cpu"})
                assert r.status_code in (201, 202), r.text
            stack.wait_ready(token, "ann", timeout=120)
            name = account_name("ann", instance_tag(os.path.realpath(stack.data_dir)))
            entry = pwd.getpwnam(name)
            assert entry.pw_dir == str(stack.data_dir / "home" / "ann"), entry
            assert os.stat(stack.data_dir / "home" / "ann").st_uid == entry.pw_uid
            accounts.append(entry)
            stack.stop_server(token, "ann")
        one, two = accounts
        assert one.pw_name != two.pw_name and one.pw_uid != two.pw_uid
    finally:
        for stack in stacks:
            stack.stop()
        for entry in pwd.getpwall():  # every account these platforms made (homes under their data directories)
            if entry.pw_name.startswith("yt") and entry.pw_dir.startswith(str(work) + "/"):
                subprocess.run(["userdel", entry.pw_name], capture_output=True, check=False)
        materialize.remove_tree(work)
