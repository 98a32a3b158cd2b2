"""Allocations: quota, user caps, absent devices, idempotency, release, atomicity."""

import asyncio

GB = 2**30


async def test_quota_user_cap_and_device_absent(service):
    a = await service.allocate("alice", "vision", "gpu-1", "alice/")
    assert a.status_code == 201, a.text
    assert a.json()["resources"] == {"cpu": 1.0, "memory": 2 * GB, "nvidia.com/gpu": 1}
    assert set(a.json()) == {"id", "user", "vc", "profile", "kind", "ref", "resources", "devices", "created"}
    r = await service.allocate("alice", "vision", "gpu-1", "alice/second")
    assert (r.status_code, r.json()) == (409, {"detail": "user cap in VC vision: alice uses 1 of 1 nvidia.com/gpu"})
    assert (await service.allocate("erin", "vision", "gpu-1", "erin/")).status_code == 201
    r = await service.allocate("frank", "vision", "gpu-1", "frank/")
    assert (r.status_code, r.json()) == (409, {"detail": "VC vision: 2 of 2 nvidia.com/gpu in use"})
    r = await service.allocate("frank", "vision", "ascend-1", "frank/")
    assert (r.status_code, r.json()) == (409, {"detail": "this cluster has no huawei.com/Ascend910"})
    r = await service.allocate("bob", "default", "cpu-small", "bob/")
    assert r.status_code == 201
    vision = (await service.call("alice", "GET", "vcs/vision")).json()
    assert vision["used"] == {"cpu": 2.0, "memory": 4 * GB, "nvidia.com/gpu": 2, "huawei.com/Ascend910": 0}
    # free is what could start: the quota's 2 Ascend NPUs are none on a cluster that has none
    # (the same refusal the picker shows: one truth for the picker, the sidebar and yt vc ls)
    assert vision["free"] == {"cpu": 6.0, "memory": 12 * GB, "nvidia.com/gpu": 0, "huawei.com/Ascend910": 0}


async def test_cpu_quota_message_uses_quantities(service):
    for i in range(4):
        assert (await service.allocate("carol", "default", "cpu-small", f"carol/s{i}")).status_code == 201
    r = await service.allocate("carol", "default", "cpu-small", "carol/s4")
    assert r.json() == {"detail": "VC default: 4 of 4 cpu in use"}


async def test_idempotent_and_release(service):
    first = await service.allocate("bob", "nlp", "gpu-1", "bob/")
    again = await service.allocate("bob", "nlp", "gpu-1", "bob/")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    job = await service.allocate("bob", "nlp", "cpu-small", "job-17", kind="job")
    assert job.status_code == 201
    r = await service.call("bob", "GET", "allocations")
    assert [a["ref"] for a in r.json()] == ["bob/", "job-17"]
    r = await service.call("admin", "GET", "allocations?vc=nlp&user=bob")
    assert len(r.json()) == 2
    r = await service.call("admin", "DELETE", "vcs/nlp")
    ids = first.json()["id"], job.json()["id"]
    assert (r.status_code, r.json()) == (
        409,
        {"detail": f"VC nlp still has allocations: {ids[0]} (bob, server bob/), {ids[1]} (bob, job job-17)"},
    )
    assert (await service.call("bob", "DELETE", f"allocations/{ids[0]}")).status_code == 204
    assert (await service.call("service", "DELETE", f"allocations/{ids[1]}")).status_code == 204
    assert (await service.call("bob", "DELETE", f"allocations/{ids[1]}")).status_code == 404
    assert (await service.call("admin", "DELETE", "vcs/nlp")).status_code == 204


async def test_devices_limited_by_inventory_across_vcs(service):
    await service.call("admin", "PATCH", "vcs/nlp", json={"quota": {"cpu": 8, "memory": "16Gi", "nvidia.com/gpu": 4}})
    await service.call("admin", "PATCH", "vcs/vision", json={"user_caps": {}})
    for i in range(2):
        assert (await service.allocate("alice", "vision", "gpu-1", f"alice/{i}")).status_code == 201
    for i in range(2):
        assert (await service.allocate("bob", "nlp", "gpu-1", f"bob/{i}")).status_code == 201
    r = await service.allocate("bob", "nlp", "gpu-1", "bob/2")
    assert r.json() == {"detail": "this cluster: 4 of 4 nvidia.com/gpu in use"}


async def test_twenty_concurrent_requests_for_the_last_gpu(service, second_service):
    """Two app instances (two engines, two process-lock tables) on one database:
    only the database lock can keep the quota."""
    body = {
        "name": "race",
        "quota": {"cpu": 64, "memory": "64Gi", "nvidia.com/gpu": 1},
        "groups": ["vision"],
        "profiles": ["gpu-1"],
    }
    assert (await service.call("admin", "POST", "vcs", json=body)).status_code == 201
    users = ["alice", "erin", "frank"]
    replies = await asyncio.gather(
        *[
            (service if i % 2 else second_service).allocate(users[i % 3], "race", "gpu-1", f"race-{i}", kind="job")
            for i in range(20)
        ]
    )
    statuses = sorted(r.status_code for r in replies)
    assert statuses == [201] + [409] * 19, [r.text for r in replies]
    assert {r.json()["detail"] for r in replies if r.status_code == 409} == {"VC race: 1 of 1 nvidia.com/gpu in use"}
    r = await service.call("admin", "GET", "allocations?vc=race")
    assert len(r.json()) == 1


async def test_concurrent_same_ref_is_one_allocation(service):
    replies = await asyncio.gather(*[service.allocate("bob", "nlp", "cpu-small", "bob/") for _ in range(8)])
    assert sorted(r.status_code for r in replies) == [200] * 7 + [201]
    assert len({r.json()["id"] for r in replies}) == 1
