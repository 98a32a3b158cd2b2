"""An empty-body `POST /hub/api/users/NAME/server` starts the first profile the user may start now
(docs/vcs.md), not the options saved from the last start: here carol's last start was the GPU
profile and the only GPU is taken, so replaying it would be refused."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("body", [{"content": b""}, {"json": {}}], ids=["no-body", "empty-object"])
def test_empty_body_starts_first_available_profile(stack, admin_token, body):
    with stack.hub(admin_token) as hub:
        r = hub.post("/users/carol/server", json={"vc": "vision", "profile": "gpu-1"})
        assert r.status_code in (201, 202), r.text
        stack.wait_ready(admin_token, "carol")
        stack.stop_server(admin_token, "carol")
        r = hub.post("/users/alice/servers/gpu", json={"vc": "vision", "profile": "gpu-1"})  # takes the GPU
        assert r.status_code in (201, 202), r.text
        stack.wait_ready(admin_token, "alice", "gpu")
        try:
            r = hub.post("/users/carol/server", **body)
            assert r.status_code in (201, 202), r.text
            srv = stack.wait_ready(admin_token, "carol")
            assert srv["user_options"] == {"vc": "vision", "profile": "cpu-small"}
            [alloc] = [a for a in stack.allocations(admin_token, vc="vision") if a["user"] == "carol"]
            assert alloc["profile"] == "cpu-small"
        finally:
            stack.stop_server(admin_token, "carol")
            stack.stop_server(admin_token, "alice", "gpu")
