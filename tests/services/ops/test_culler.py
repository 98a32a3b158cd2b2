"""Per-VC idle culling driven by the platform (ops/culler.py): a VC's idle_timeout changed
through the API (as the console does) holds at the next pass, without restarting the hub."""

import asyncio

import pytest

from yitong_services.core.settings import Settings
from yitong_services.ops.culler import idle_for, pass_interval

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


@pytest.mark.parametrize(
    "server,expected",
    [
        ({"ready": True, "last_activity": "2027-01-15T07:50:00Z"}, 600.0),
        ({"ready": True, "last_activity": None, "started": "2027-01-15T07:59:00Z"}, 60.0),
        ({"ready": False, "pending": "spawn", "last_activity": "2027-01-15T07:00:00Z"}, None),
        ({"ready": True, "pending": "stop", "last_activity": "2027-01-15T07:00:00Z"}, None),
        (None, None),
    ],
)
def test_idle_for(server, expected):
    assert idle_for(server, NOW) == expected


@pytest.mark.parametrize(
    "culling,timeouts,expected",
    [({}, [], 60.0), ({}, [600, 7200], 60.0), ({}, [36000], 300.0), ({}, [60], 30.0), ({"every": 5}, [600], 5.0)],
)
def test_pass_interval(culling, timeouts, expected):
    assert pass_interval(Settings.model_validate({"culling": culling}).culling, timeouts) == expected


async def test_a_timeout_changed_in_the_console_holds_at_the_next_pass(service, hub):
    culler = service.app.state.culler
    hub.api("POST", "/users/alice/server")
    hub.api("POST", "/users/bob/server")
    try:
        assert (await service.allocate("alice", "vision", "cpu-small", "alice/")).status_code == 201
        assert (await service.allocate("bob", "nlp", "cpu-small", "bob/")).status_code == 201
        await asyncio.sleep(1.5)
        await culler.tick()  # no VC has a timeout: nothing stopped
        assert "" in hub.api("GET", "/users/alice").json()["servers"]
        r = await service.call("admin", "PATCH", "vcs/vision", json={"idle_timeout": 1})
        assert r.status_code == 200 and r.json()["idle_timeout"] == 1
        await culler.tick()
        assert culler.timeouts == {"vision": 1}
        assert "" not in hub.api("GET", "/users/alice").json()["servers"]  # vision's server, idle > 1 s
        assert "" in hub.api("GET", "/users/bob").json()["servers"]  # nlp has no timeout
        assert culler.stopped[-1]["ref"] == "alice/" and "VC vision: 1 s" in culler.stopped[-1]["reason"]
        # cleared: back to the hub-wide policy only
        r = await service.call("admin", "PATCH", "vcs/vision", json={"idle_timeout": None})
        assert r.json()["idle_timeout"] is None
        assert (await service.call("admin", "PATCH", "vcs/vision", json={"idle_timeout": 0})).status_code == 422
        assert (await service.call("alice", "PATCH", "vcs/vision", json={"idle_timeout": 5})).status_code == 403
    finally:
        for user in ("alice", "bob"):
            hub.api("DELETE", f"/users/{user}/server")


async def test_culling_vcs_seed_the_vcs_timeout(service_factory):
    async with service_factory(data_dir="seeded", culling={"timeout": 3600, "vcs": {"nlp": 900}}) as svc:
        vcs = {v["name"]: v["idle_timeout"] for v in (await svc.call("admin", "GET", "vcs")).json()}
    assert vcs["nlp"] == 900 and vcs["vision"] is None
