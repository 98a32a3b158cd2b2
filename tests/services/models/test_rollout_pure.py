"""Rolling and canary deployments (models/rollout.py), pure: shares, the weighted split, drains
and the endpoint's state, as tables of cases."""

from __future__ import annotations

import pytest

from yitong_services.models import rollout


def rep(job, number, weight, routed=True, draining=None):
    return {
        "job": job,
        "number": number,
        "version_id": number,
        "weight": weight,
        "routed": routed,
        "draining": draining,
    }


@pytest.mark.parametrize(
    ("replicas", "number", "share", "expected"),
    [
        ([rep(1, 1, 100), rep(2, 2, 0, routed=False)], 2, 100, {1: 0, 2: 100}),  # a full roll
        ([rep(1, 1, 100), rep(2, 2, 0, routed=False)], 2, 10, {1: 90, 2: 10}),  # a canary
        ([rep(1, 1, 90), rep(2, 2, 10)], 2, 100, {1: 0, 2: 100}),  # promote the canary
        ([rep(1, 1, 90), rep(2, 2, 10)], 1, 100, {1: 100, 2: 0}),  # roll back
        ([rep(1, 1, 90), rep(2, 2, 10), rep(3, 3, 0, routed=False)], 3, 20, {1: 80, 2: 0, 3: 20}),  # a new canary
        ([rep(1, 1, 100, draining=5.0), rep(2, 2, 100)], 1, 100, {1: 0, 2: 0}),  # a draining one is not reused
    ],
)
def test_target_weights(replicas, number, share, expected):
    assert rollout.target_weights(replicas, number, share) == expected


def test_weighted_split_is_exact_and_interleaved():
    reps = [rep(1, 1, 90), rep(2, 2, 10)]
    scores: dict[int, float] = {}
    picks = [rollout.pick(reps, scores)["number"] for _ in range(200)]
    assert picks.count(2) == 20
    assert [picks[i * 10 : i * 10 + 10].count(2) for i in range(20)] == [1] * 20  # one in every ten


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        ([rep(1, 1, 0), rep(2, 2, 100, routed=False)], [1]),  # a roll whose replica is not ready: v1 answers
        ([rep(1, 1, 0), rep(2, 2, 100)], [2]),
        ([rep(1, 1, 90), rep(2, 2, 10)], [1, 2]),
        ([rep(1, 1, 0, routed=False, draining=1.0), rep(2, 2, 100)], [2]),
    ],
)
def test_candidates(replicas, expected):
    assert [r["job"] for r in rollout.candidates(replicas)] == expected


@pytest.mark.parametrize(
    ("replicas", "inflight", "now", "drain", "stop"),
    [
        ([rep(1, 1, 0), rep(2, 2, 100, routed=False)], {}, 10.0, [], []),  # v2 not ready: v1 stays
        ([rep(1, 1, 0), rep(2, 2, 100)], {}, 10.0, [1], []),  # v2 answers: v1 leaves the route
        ([rep(1, 1, 0, routed=False, draining=9.0), rep(2, 2, 100)], {}, 10.0, [], []),  # within the grace
        ([rep(1, 1, 0, routed=False, draining=7.0), rep(2, 2, 100)], {1: 1}, 10.0, [], []),  # a request in flight
        ([rep(1, 1, 0, routed=False, draining=7.0), rep(2, 2, 100)], {}, 10.0, [], [1]),  # answered: stop
        ([rep(1, 1, 0, routed=False, draining=0.0), rep(2, 2, 100)], {1: 3}, 500.0, [], [1]),  # waited too long
        ([rep(1, 1, 100), rep(3, 3, 0, routed=False)], {}, 10.0, [], [3]),  # a superseded canary still queued
    ],
)
def test_drain_and_stop(replicas, inflight, now, drain, stop):
    assert rollout.to_drain(replicas) == drain
    assert rollout.to_stop(replicas, inflight, now) == stop


@pytest.mark.parametrize(
    ("replicas", "jobs", "expected"),
    [
        (
            [rep(1, 1, 100, routed=False)],
            {1: ("queued", "waiting: VC vision: 1 of 1 cpu in use")},
            ("queued", "waiting: VC vision: 1 of 1 cpu in use"),
        ),
        ([rep(1, 1, 100, routed=False)], {1: ("running", "")}, ("starting", "")),
        (
            [rep(1, 1, 100, routed=False)],
            {1: ("failed", "exit code 1")},
            ("failed", "replica v1 (job 1) failed: exit code 1"),
        ),
        ([rep(1, 1, 100)], {1: ("running", "")}, ("ready", "")),
        ([rep(1, 1, 0), rep(2, 2, 100)], {1: ("running", ""), 2: ("running", "")}, ("ready", "draining v1")),
        (
            [rep(1, 1, 0), rep(2, 2, 100, routed=False)],
            {1: ("running", ""), 2: ("queued", "waiting: x")},
            ("ready", "rolling to v2: queued: waiting: x"),
        ),
        (
            [rep(1, 1, 0), rep(2, 2, 100, routed=False)],
            {1: ("running", ""), 2: ("running", "")},
            ("ready", "rolling to v2: starting"),
        ),
        (
            [rep(1, 1, 0, routed=False, draining=1.0), rep(2, 2, 100)],
            {1: ("running", ""), 2: ("running", "")},
            ("ready", "draining v1"),
        ),
    ],
)
def test_state(replicas, jobs, expected):
    assert rollout.state(replicas, jobs) == expected


@pytest.mark.parametrize(
    ("replicas", "number", "share", "expected"),
    [
        # two replicas per version: every replica of a version carries the version's share
        ([rep(1, 1, 100), rep(2, 1, 100), rep(3, 2, 0, routed=False)], 2, 10, {1: 90, 2: 90, 3: 10}),
        ([rep(1, 1, 90), rep(2, 1, 90), rep(3, 2, 10), rep(4, 2, 10)], 2, 100, {1: 0, 2: 0, 3: 100, 4: 100}),
        ([rep(1, 1, 0, routed=False, draining=3.0), rep(2, 1, 100)], 1, 100, {1: 0, 2: 100}),  # a scaled-down one
    ],
)
def test_target_weights_of_replicas(replicas, number, share, expected):
    assert rollout.target_weights(replicas, number, share) == expected


@pytest.mark.parametrize(
    ("replicas", "count", "number", "share", "add", "drop"),
    [
        ([rep(1, 1, 100)], 3, None, 100, {1: 2}, []),  # scale up
        (
            [rep(1, 1, 100), rep(2, 1, 100), rep(3, 1, 100, routed=False)],
            1,
            None,
            100,
            {},
            [3, 2],
        ),  # down: queued first
        ([rep(1, 1, 100), rep(2, 1, 100)], 2, 2, 100, {2: 2}, []),  # a roll: two of v2, v1 drains once v2 answers
        ([rep(1, 1, 100), rep(2, 1, 100)], 2, 2, 10, {2: 2}, []),  # a canary on two replicas beside v1's two
        ([rep(1, 1, 90), rep(2, 2, 10)], 2, None, 100, {1: 1, 2: 1}, []),  # scaling counts per version
        ([rep(1, 1, 100, draining=1.0), rep(2, 1, 100)], 1, None, 100, {}, []),  # a draining one is not counted
    ],
)
def test_plan(replicas, count, number, share, add, drop):
    reps, to_add, shares, to_drop = rollout.plan(replicas, count, number, share)
    assert (to_add, to_drop) == (add, drop)
    assert set(shares) == set(add)
    if number is not None and number in add:
        assert shares[number] == share


def test_a_share_is_of_requests_not_of_replicas():
    """v1 (90%) on one replica, v2 (10%) on three: still 10 of every 100 requests to v2, spread evenly."""
    reps = [rep(1, 1, 90), rep(2, 2, 10), rep(3, 2, 10), rep(4, 2, 10)]
    scores: dict[int, float] = {}
    picks = [rollout.pick(reps, scores)["job"] for _ in range(300)]
    assert picks.count(1) == 270 and [picks.count(j) for j in (2, 3, 4)] == [10, 10, 10]
    two = [rep(1, 1, 100), rep(2, 1, 100)]
    assert [rollout.pick(two, scores)["job"] for _ in range(6)].count(2) == 3  # round robin over a version's replicas


@pytest.mark.parametrize(
    ("replicas", "jobs", "scale", "expected"),
    [
        (  # scaled past the quota: the extra replica's queue reason is the endpoint's
            [rep(1, 1, 100), rep(2, 1, 100, routed=False)],
            {1: ("running", ""), 2: ("queued", "waiting: VC vision: 1 of 1 cpu in use")},
            2,
            ("ready", "v1: 1 of 2 replicas ready; queued: waiting: VC vision: 1 of 1 cpu in use"),
        ),
        (
            [rep(1, 1, 100), rep(2, 1, 100, routed=False)],
            {1: ("running", ""), 2: ("running", "")},
            2,
            ("ready", "v1: 1 of 2 replicas ready; starting"),
        ),
        (  # one replica's job ended (cancelled): the other answers; the count says so
            [rep(1, 1, 100)],
            {1: ("running", "")},
            2,
            ("ready", "v1: 1 of 2 replicas run (one ended); scale again to replace it"),
        ),
        ([rep(1, 1, 100), rep(2, 1, 100)], {1: ("running", ""), 2: ("running", "")}, 2, ("ready", "")),
        (  # a roll on two replicas: one of v2 answers, the other starts
            [rep(1, 1, 0), rep(3, 2, 100), rep(4, 2, 100, routed=False)],
            {1: ("running", ""), 3: ("running", ""), 4: ("running", "")},
            2,
            ("ready", "v2: 1 of 2 replicas ready; starting"),
        ),
    ],
)
def test_state_of_replicas(replicas, jobs, scale, expected):
    assert rollout.state(replicas, jobs, scale) == expected


def test_router_counts_requests_in_flight():
    router = rollout.Router()
    reps = [rep(1, 1, 100)]
    chosen = router.choose("iris", reps, set())
    router.enter(chosen["job"])
    router.enter(chosen["job"])
    router.leave(chosen["job"])
    assert router.inflight == {1: 1}
    router.leave(chosen["job"])
    assert router.inflight == {} and router.choose("iris", reps, {1}) is None
