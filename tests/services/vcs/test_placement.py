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


async def test_a_job_is_not_given_a_servers_device(service_factory):
    from jobs_helpers import py_job, wait_state

    async with service_factory(jobs={"poll_interval": 0.05}) as svc:
        server = (await svc.allocate("erin", "vision", "gpu-1", "erin/")).json()  # a user cap of 1 GPU each
        assert server["devices"]["visible"] == [0]
        body = py_job("g", "vision", "import os; print(os.environ['CUDA_VISIBLE_DEVICES'])")
        body["accelerator"] = {"type": "nvidia.com/gpu", "count": 1}
        r = await svc.call("alice", "POST", "jobs", json=body)
        assert r.status_code == 201, r.text
        job = await wait_state(svc, "alice", r.json()["id"])
        assert job["devices"]["visible"] == [1], job
