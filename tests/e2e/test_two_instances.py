"""Two platforms from one checkout: different data directories and ports, the same working
directory (as two `make run` with their own DATA_DIR and ports). Neither writes into the
working directory, stopping one leaves the other serving, and Ctrl-C logs no error."""

from __future__ import annotations

import re
import secrets

import httpx
import pytest
from stack import Stack

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
