"""Local backend: a server's accelerators get device indices of their own, recorded in its
allocation (the spawner sets the visible-device variable to them; the reclaim matches them)."""

import pytest

from yitong_services.vcs.placement import node_name, pick


@pytest.mark.parametrize(
    "count,total,taken,expected",
    [(1, 4, [], [0]), (2, 4, [0, 2], [1, 3]), (1, 2, [0, 1], None), (3, 4, [1], [0, 2, 3])],
)
def test_pick(count, total, taken, expected):
    assert pick(count, total, taken) == expected


def test_the_job_states_holding_devices_agree():
    from yitong_services.jobs.states import ACTIVE
    from yitong_services.vcs.placement import ACTIVE_JOBS

    assert set(ACTIVE_JOBS) == set(ACTIVE)


async def test_servers_get_distinct_indices_and_jobs_avoid_them(service):
    # the test settings' inventory has 4 fake nvidia.com/gpu; vision's quota allows 2
    first = (await service.allocate("alice", "vision", "gpu-1", "alice/a")).json()
    second = (await service.allocate("erin", "vision", "gpu-1", "erin/")).json()
    assert first["devices"] == {"node": node_name(), "type": "nvidia.com/gpu", "visible": [0]}
    assert second["devices"]["visible"] == [1]
    cpu = (await service.allocate("alice", "vision", "cpu-small", "alice/c")).json()
    assert cpu["devices"] is None
    assert (await service.call("service", "DELETE", f"allocations/{first['id']}")).status_code == 204
    third = (await service.allocate("frank", "vision", "gpu-1", "frank/")).json()
    assert third["devices"]["visible"] == [0]  # freed, given again
