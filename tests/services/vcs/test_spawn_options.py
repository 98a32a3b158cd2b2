"""The picker's model: each user sees only their VCs; unavailable profiles say why."""


def summary(payload: dict) -> dict:
    return {vc["name"]: {p["name"]: p["reason"] for p in vc["profiles"]} for vc in payload["vcs"]}


async def test_each_user_sees_their_vcs_with_reasons(service):
    r = await service.call("service", "GET", "spawn-options?user=alice")
    assert r.status_code == 200
    assert r.json()["user"] == "alice"
    assert summary(r.json()) == {
        "default": {"cpu-small": None},
        "vision": {"cpu-small": None, "gpu-1": None, "ascend-1": "this cluster has no huawei.com/Ascend910"},
    }
    assert summary((await service.call("bob", "GET", "spawn-options")).json()) == {
        "default": {"cpu-small": None},
        "nlp": {"cpu-small": None, "gpu-1": None},
    }
    assert (await service.call("dave", "GET", "spawn-options")).json() == {
        "user": "dave",
        "vcs": [],
        "account": None,
        "visible_env": ["ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"],
    }


async def test_reasons_follow_usage(service):
    assert (await service.allocate("alice", "vision", "gpu-1", "alice/")).status_code == 201
    alice = summary((await service.call("alice", "GET", "spawn-options")).json())
    assert alice["vision"]["gpu-1"] == "user cap in VC vision: alice uses 1 of 1 nvidia.com/gpu"
    erin = (await service.call("service", "GET", "spawn-options?user=erin")).json()
    vision = next(vc for vc in erin["vcs"] if vc["name"] == "vision")
    gpu = next(p for p in vision["profiles"] if p["name"] == "gpu-1")
    assert gpu["available"] is True and gpu["reason"] is None
    assert vision["used"]["nvidia.com/gpu"] == 1 and vision["free"]["nvidia.com/gpu"] == 1
    assert gpu["accelerator"] == {"type": "nvidia.com/gpu", "count": 1}
    assert (await service.allocate("erin", "vision", "gpu-1", "erin/")).status_code == 201
    frank = summary((await service.call("service", "GET", "spawn-options?user=frank")).json())
    assert frank["vision"]["gpu-1"] == "VC vision: 2 of 2 nvidia.com/gpu in use"
    assert frank["vision"]["cpu-small"] is None


async def test_accelerator_profiles_carry_their_placement(service):
    """The settings' accelerator table (defaults here) goes to the spawner with each profile."""
    vcs = (await service.call("alice", "GET", "spawn-options")).json()["vcs"]
    vision = next(vc for vc in vcs if vc["name"] == "vision")
    by_name = {p["name"]: p["placement"] for p in vision["profiles"]}
    assert by_name["cpu-small"] is None
    assert by_name["gpu-1"] == {
        "type": "nvidia.com/gpu",
        "kubernetes": {
            "node_selector": {"accelerator": "nvidia"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
        "slurm": {"gres": "gpu"},
        "local": {"visible_env": ["CUDA_VISIBLE_DEVICES"]},
    }
    assert by_name["ascend-1"]["slurm"] == {"gres": "npu"}


async def test_free_now_is_capped_by_the_cluster_and_worded_in_one_style(service):
    """Vision's quota grants 2 Ascend NPUs on a cluster that has none: 'free' is the quota left,
    'free_now' what could start; both texts and each profile's size in the service's style."""
    assert (await service.allocate("alice", "vision", "gpu-1", "alice/")).status_code == 201
    vcs = (await service.call("alice", "GET", "spawn-options")).json()["vcs"]
    vision = next(vc for vc in vcs if vc["name"] == "vision")
    assert vision["free_now"]["huawei.com/Ascend910"] == 0 and vision["quota"]["huawei.com/Ascend910"] == 2
    # one truth: the picker's "free now" is GET /vcs's free (the sidebar, the VC tab, yt vc ls)
    (listed,) = [vc for vc in (await service.call("alice", "GET", "vcs")).json() if vc["name"] == "vision"]
    assert vision["free"] == vision["free_now"] == listed["free"]
    assert vision["free_now"]["nvidia.com/gpu"] == 1
    assert vision["free_now_text"] == "7 cpu, 14Gi memory, 1 nvidia.com/gpu, 0 huawei.com/Ascend910"
    assert vision["quota_text"] == "8 cpu, 16Gi memory, 2 nvidia.com/gpu, 2 huawei.com/Ascend910"
    sizes = {p["name"]: p["size"] for p in vision["profiles"]}
    assert sizes == {
        "cpu-small": "1 cpu, 2Gi memory",
        "gpu-1": "1 cpu, 2Gi memory, 1 nvidia.com/gpu",
        "ascend-1": "1 cpu, 2Gi memory, 1 huawei.com/Ascend910",
    }
