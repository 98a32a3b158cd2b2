"""Quota refusal reasons count what is in use and say what was asked (issue 8: "0 of 1 in use"
was shown for a request that the usage alone did not refuse).

Every reason either shows a full resource ("1 of 1 in use"), or names the amount asked: a
reason "N of M in use" with N < M and no ask would contradict itself.
"""

from __future__ import annotations

import re

import pytest

from yitong_services.vcs import quota

GI = 2**30
GPU = "nvidia.com/gpu"
VC = quota.VCLimits("vision", {"cpu": 8.0, "memory": 16 * GI, GPU: 2}, {GPU: 1, "cpu": 4.0})
INV = {"cpu": 64.0, "memory": 256 * GI, GPU: 4}


def held(*rows: tuple[str, dict]) -> list[quota.Held]:
    return [quota.Held(user, res) for user, res in rows]


@pytest.mark.parametrize(
    "request_,allocations,user,cluster,reason",
    [
        # the VC is full: the count is what is held
        (
            {GPU: 1},
            held(("bob", {GPU: 1}), ("erin", {GPU: 1})),
            "alice",
            None,
            "VC vision: 2 of 2 nvidia.com/gpu in use",
        ),
        ({"cpu": 4.0}, held(("bob", {"cpu": 8.0})), "alice", None, "VC vision: 8 of 8 cpu in use"),
        # room is left, but not enough: the ask is named
        ({GPU: 2}, held(("bob", {GPU: 1})), "alice", None, "VC vision: 1 of 2 nvidia.com/gpu in use, 2 asked"),
        (
            {"memory": 4 * GI},
            held(("bob", {"memory": 14 * GI})),
            "alice",
            None,
            "VC vision: 14Gi of 16Gi memory in use, 4Gi asked",
        ),
        (
            {"cpu": 2.5},
            held(("bob", {"cpu": 3.0}), ("erin", {"cpu": 3.5})),
            "alice",
            None,
            "VC vision: 6.5 of 8 cpu in use, 2.5 asked",
        ),
        # the ask alone is more than the quota: never "0 of 8 in use"
        ({"cpu": 9.0}, [], "alice", None, "VC vision: 9 cpu asked, its quota is 8"),
        ({GPU: 3}, held(("bob", {GPU: 1})), "alice", None, "VC vision: 3 nvidia.com/gpu asked, its quota is 2"),
        # user caps
        ({GPU: 1}, held(("alice", {GPU: 1})), "alice", None, "user cap in VC vision: alice uses 1 of 1 nvidia.com/gpu"),
        (
            {"cpu": 2.0},
            held(("alice", {"cpu": 3.0})),
            "alice",
            None,
            "user cap in VC vision: alice uses 3 of 4 cpu, 2 asked",
        ),
        ({GPU: 2}, [], "alice", None, "user cap in VC vision: 2 nvidia.com/gpu asked, the cap is 1"),
        ({GPU: 1}, held(("bob", {GPU: 1})), "alice", None, None),  # bob's GPU is not alice's cap
        # the cluster's devices, across VCs
        ({GPU: 1}, [], "alice", {GPU: 4}, "this cluster: 4 of 4 nvidia.com/gpu in use"),
        ({GPU: 1}, [], "alice", {GPU: 3}, None),
        # memory and the GPU both bind: the GPU, the scarce one, is named (issue 10)
        (
            {"cpu": 1.0, "memory": 4 * GI, GPU: 1},
            held(("bob", {"memory": 14 * GI, GPU: 1}), ("erin", {GPU: 1})),
            "alice",
            None,
            "VC vision: 2 of 2 nvidia.com/gpu in use",
        ),
    ],
)
def test_reason(request_, allocations, user, cluster, reason):
    assert quota.check(request_, VC, allocations, user, INV, cluster) == reason


def test_cluster_reasons():
    big = quota.VCLimits("big", {GPU: 8}, {})
    assert (
        quota.check({GPU: 2}, big, [], "alice", INV, {GPU: 3}) == "this cluster: 3 of 4 nvidia.com/gpu in use, 2 asked"
    )
    assert quota.check({GPU: 5}, big, [], "alice", INV, {GPU: 0}) == "this cluster: 5 nvidia.com/gpu asked, it has 4"


COUNT = re.compile(r"(\S+) of (\S+) \S+ in use(, \S+ asked)?$")


@pytest.mark.parametrize("in_use", [0, 1, 2])
@pytest.mark.parametrize("asked", [1, 2, 3])
def test_no_reason_contradicts_itself(in_use, asked):
    """Over a grid: a refusal that shows "N of M in use" with N < M always names the ask."""
    vc = quota.VCLimits("v", {GPU: 2}, {})
    reason = quota.check({GPU: asked}, vc, held(("bob", {GPU: in_use})) if in_use else [], "alice", INV, None)
    assert (reason is None) == (in_use + asked <= 2)
    m = COUNT.search(reason or "")
    if m:
        assert m.group(1) == str(in_use)
        assert int(m.group(1)) >= int(m.group(2)) or m.group(3), reason


@pytest.mark.parametrize(
    "request_,vc,server,expected",
    [
        # the example settings: a 2-cpu user cap, a 1-cpu server, 1-cpu trials: one at a time
        (
            {"cpu": 1.0},
            quota.VCLimits("default", {"cpu": 4.0}, {"cpu": 2.0}),
            {"cpu": 1.0},
            (1, "at most 1 trial can run at once: your per-user cap is 2 cpu, your server holds 1, each trial asks 1"),
        ),
        # no server: the VC's quota binds before the (absent) cap
        (
            {"cpu": 3.0, "memory": GI},
            quota.VCLimits("vision", {"cpu": 8.0, "memory": 16 * GI}),
            {},
            (2, "at most 2 trials can run at once: VC vision's quota is 8 cpu, each trial asks 3"),
        ),
        # the server holds the whole cap: none can run beside it
        (
            {GPU: 1},
            VC,
            {GPU: 1},
            (0, f"no trial can run at once: your per-user cap is 1 {GPU}, your server holds 1, each trial asks 1"),
        ),
        ({"cpu": 1.0}, quota.VCLimits("open", {}), {}, None),  # nothing limits it (the submit refuses)
    ],
)
def test_how_many_trials_fit_at_once(request_, vc, server, expected):
    assert quota.at_once(request_, vc, server) == expected
