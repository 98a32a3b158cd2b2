"""Accelerator reclaim: the policy as a table (pure), and the route's view per caller."""

import pytest

from yitong_services.ops.reclaim import decide
from yitong_services.ops.schemas import ReclaimSettings

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
LONG_AGO = "2027-01-15T06:00:00Z"
JUST_NOW = "2027-01-15T07:59:30Z"
MEASURED = ReclaimSettings(idle=600, grace=300)
UNMEASURED_OK = ReclaimSettings(idle=600, grace=300, require_measurement=False)


def seen(states=("idle",), activity=LONG_AGO, busy=0.0, terminals=()):
    return {
        "kernels": [{"execution_state": s, "last_activity": activity} for s in states],
        "terminals": [{"last_activity": t} for t in terminals],
        "last_activity": activity,
        "accelerator_busy": busy,
    }


@pytest.mark.parametrize(
    "server,policy,warned,expected",
    [
        # a busy kernel is never touched, however long ago anything else happened, warned or not
        (seen(states=("idle", "busy")), MEASURED, NOW - 10_000, ("keep", "a kernel is busy")),
        (seen(states=("starting",), busy=None), UNMEASURED_OK, None, ("keep", "a kernel is busy")),
        # the accelerator in use keeps it
        (seen(busy=0.4), MEASURED, None, ("keep", "its accelerator is in use (40%)")),
        # not measured: kept unless the policy allows idle kernels alone
        (
            seen(busy=None),
            MEASURED,
            None,
            ("keep", "its accelerator's use is not measured (no NVML): not reclaimed on idle kernels alone"),
        ),
        (seen(busy=None), UNMEASURED_OK, None, ("warn", "idle with an accelerator: stopped in 300 s unless used")),
        # recent activity (kernel, terminal) keeps it
        (seen(activity=JUST_NOW), MEASURED, None, ("keep", "active 30 s ago")),
        (seen(terminals=(JUST_NOW,)), MEASURED, None, ("keep", "active 30 s ago")),
        # idle: warned first, then stopped after the grace
        (seen(), MEASURED, None, ("warn", "idle with an accelerator: stopped in 300 s unless used")),
        (seen(), MEASURED, NOW - 100, ("keep", "warned; stopped in 200 s unless used")),
        (seen(), MEASURED, NOW - 300, ("stop", "idle with an accelerator for 7200 s after a warning")),
        (seen(states=()), MEASURED, NOW - 301, ("stop", "idle with an accelerator for 7200 s after a warning")),
    ],
)
def test_decide(server, policy, warned, expected):
    assert decide(server, NOW, policy, warned) == expected


async def test_route_shows_each_person_their_own(service):
    reclaimer = service.app.state.reclaimer
    reclaimer.decisions = {
        "alice/gpu": {"ref": "alice/gpu", "user": "alice", "vc": "vision", "action": "warn", "reason": "idle"},
        "bob/": {"ref": "bob/", "user": "bob", "vc": "nlp", "action": "keep", "reason": "a kernel is busy"},
    }
    mine = (await service.call("alice", "GET", "reclaim")).json()
    assert [d["ref"] for d in mine["servers"]] == ["alice/gpu"] and mine["policy"]["enabled"] is False
    every = (await service.call("admin", "GET", "reclaim")).json()
    assert sorted(d["ref"] for d in every["servers"]) == ["alice/gpu", "bob/"]


def test_policy_sentence():
    from yitong_services.ops.console import reclaim_policy

    assert reclaim_policy(ReclaimSettings().model_dump()).startswith("Accelerator reclaim is off")
    on = ReclaimSettings(enabled=True, idle=1800, grace=600).model_dump()
    assert reclaim_policy(on) == (
        "A server holding an accelerator, its kernels and terminals idle for 30 min and its accelerator below 5% busy,"
        " is warned, then stopped 10 min later; a busy kernel is never touched."
    )


@pytest.mark.parametrize(
    "who,query,expected",
    [
        ("alice", {}, ["alice/", "alice/gpu"]),  # her own warned servers, not the kept one, not bob's
        ("alice", {"server": "gpu"}, ["alice/gpu"]),  # one server's (the JupyterLab extension asks so)
        ("alice", {"server": ""}, ["alice/"]),
        ("bob", {}, []),  # bob's server was warned, then used again: nothing pending
        ("admin", {}, []),  # admins too see only their own here (GET /reclaim shows every server)
        ("service", {}, []),
    ],
)
async def test_warnings_route_lists_the_callers_own_pending_warnings(service, who, query, expected):
    def decision(ref, action, warned_at):
        user, vc = ref.split("/")[0], "nlp" if ref.startswith("bob") else "vision"
        return {
            "ref": ref,
            "user": user,
            "vc": vc,
            "devices": {"nvidia.com/gpu": 1},
            "action": action,
            "reason": "idle with an accelerator: stopped in 300 s unless used",
            "measured": "GPU 0 0% on n1, 3 s ago",
            "at": NOW,
            "warned_at": warned_at,
            "stop_at": None if warned_at is None else warned_at + 300,
        }

    service.app.state.reclaimer.decisions = {
        d["ref"]: d
        for d in [
            decision("alice/", "warn", NOW),
            decision("alice/gpu", "keep", NOW - 100),  # warned, counting down
            decision("alice/cpu", "keep", None),
            decision("bob/", "keep", None),
        ]
    }
    r = await service.call(who, "GET", "reclaim/warnings", params=query)
    assert r.status_code == 200
    assert [w["ref"] for w in r.json()["warnings"]] == expected
    if expected:
        first = r.json()["warnings"][0]
        assert first["stop_at"] == first["warned_at"] + 300 and first["measured"].startswith("GPU 0")


async def test_warnings_route_bounds_its_input(service):
    r = await service.call("alice", "GET", "reclaim/warnings", params={"server": "x" * 300})
    assert r.status_code == 422
