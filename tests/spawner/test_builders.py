"""Pure builders against dict literals."""

from __future__ import annotations

import pytest
from spawner.platform_standin import GiB, profile

from yitong_spawner.builders import BuildError, kube_overrides, local_overrides, profile_resources, slurm_overrides

ENV = {"YITONG_API_URL": "http://api", "YITONG_VC": "vision", "YITONG_PROFILE": "p"}
GPU_PLACEMENT = {
    "type": "nvidia.com/gpu",
    "kubernetes": {
        "node_selector": {"accelerator": "nvidia"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    },
    "slurm": {"gres": "gpu"},
    "local": {"visible_env": ["CUDA_VISIBLE_DEVICES"]},
}
NPU_PLACEMENT = {
    "type": "huawei.com/Ascend910",
    "kubernetes": {"node_selector": {}, "tolerations": []},
    "slurm": {"gres": "npu"},
    "local": {"visible_env": ["ASCEND_RT_VISIBLE_DEVICES"]},
}
GPU2 = profile(
    "gpu-2",
    cpu=4,
    memory=16 * GiB,
    accelerator={"type": "nvidia.com/gpu", "count": 2},
    arch="amd64",
    image="yitong/singleuser-cuda:latest",
)
NPU = profile("npu-1", cpu=2, memory=8 * GiB, accelerator={"type": "huawei.com/Ascend910", "count": 1}, arch="arm64")
CPU = profile("cpu-small", cpu=0.5, memory=GiB + 1)


def test_kube_gpu_amd64():
    assert kube_overrides(
        vc="vision",
        profile=GPU2,
        resources=profile_resources(GPU2),
        env=ENV,
        placement=GPU_PLACEMENT,
    ) == {
        "namespace": "yitong-vision",
        "image": "yitong/singleuser-cuda:latest",
        "cpu_limit": 4.0,
        "cpu_guarantee": 4.0,
        "mem_limit": 16 * GiB,
        "mem_guarantee": 16 * GiB,
        "extra_resource_limits": {"nvidia.com/gpu": "2"},
        "extra_resource_guarantees": {"nvidia.com/gpu": "2"},
        "node_selector": {"accelerator": "nvidia"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "node_affinity_required": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
        ],
        "extra_labels": {"kueue.x-k8s.io/queue-name": "vision", "yitong.io/vc": "vision", "yitong.io/profile": "gpu-2"},
        "environment": ENV,
    }


def test_kube_cpu_has_no_device_placement():
    out = kube_overrides(
        vc="nlp",
        profile=CPU,
        resources=profile_resources(CPU),
        env=ENV,
        namespace_prefix="t-",
        placement=GPU_PLACEMENT,  # a placement for another kind than the profile's resources is not used
    )
    assert out["namespace"] == "t-nlp"
    assert not {"node_selector", "tolerations", "node_affinity_required", "extra_resource_limits"} & set(out)


@pytest.mark.parametrize(
    "prof, partition, account, expected",
    [
        (
            GPU2,
            "debug",
            "{vc}",
            {
                "req_partition": "debug",
                "req_account": "vision",
                "req_nprocs": "4",
                "req_memory": "16384M",
                "req_gres": "gpu:2",
            },
        ),
        (
            NPU,
            "",
            "yt-{vc}-{profile}",
            {"req_account": "yt-vision-npu-1", "req_nprocs": "2", "req_memory": "8192M", "req_gres": "npu:1"},
        ),
        (CPU, "debug", "", {"req_partition": "debug", "req_nprocs": "1", "req_memory": "1025M"}),
    ],
)
def test_slurm(prof, partition, account, expected):
    out = slurm_overrides(
        vc="vision",
        profile=prof,
        resources=profile_resources(prof),
        env=ENV,
        partition=partition,
        account_template=account,
        placement={"gpu-2": GPU_PLACEMENT, "npu-1": NPU_PLACEMENT}.get(prof["name"]),
    )
    assert {k: v for k, v in out.items() if k.startswith("req_")} == expected
    assert out["environment"] == ENV


def test_slurm_unknown_device_is_a_clear_error():
    with pytest.raises(BuildError, match="no GRES configured for nvidia.com/gpu"):
        slurm_overrides(vc="v", profile=GPU2, resources=profile_resources(GPU2), env=ENV, placement=None)
    no_gres = {**GPU_PLACEMENT, "slurm": {"gres": None}}
    with pytest.raises(BuildError, match="no GRES configured for nvidia.com/gpu"):
        slurm_overrides(vc="v", profile=GPU2, resources=profile_resources(GPU2), env=ENV, placement=no_gres)


@pytest.mark.parametrize(
    "resources, placement, expected",
    [
        (
            {"cpu": 1.0, "nvidia.com/gpu": 3},
            GPU_PLACEMENT,
            {"CUDA_VISIBLE_DEVICES": "0,1,2", "ASCEND_RT_VISIBLE_DEVICES": ""},
        ),
        (
            {"cpu": 1.0, "huawei.com/Ascend910": 2},
            NPU_PLACEMENT,
            {"CUDA_VISIBLE_DEVICES": "", "ASCEND_RT_VISIBLE_DEVICES": "0,1"},
        ),
        ({"cpu": 1.0}, None, {"CUDA_VISIBLE_DEVICES": "", "ASCEND_RT_VISIBLE_DEVICES": ""}),
    ],
)
def test_local(resources, placement, expected):
    names = ["CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"]
    out = local_overrides(resources=resources, env=ENV, visible_env=names, placement=placement)
    assert out == {"cpu_limit": 1.0, "cpu_guarantee": 1.0, "environment": {**ENV, **expected}}


@pytest.mark.parametrize(
    "indices, expected",
    [
        ([2, 3], "2,3"),  # the indices the platform picked for this server (its allocation's devices)
        (None, "0,1"),  # a platform that did not place them
        ([5], "0,1"),  # a mismatch with the count is not trusted
    ],
)
def test_local_placed_indices(indices, expected):
    out = local_overrides(
        resources={"cpu": 1.0, "nvidia.com/gpu": 2},
        env=ENV,
        visible_env=["CUDA_VISIBLE_DEVICES"],
        placement=GPU_PLACEMENT,
        indices=indices,
    )
    assert out["environment"]["CUDA_VISIBLE_DEVICES"] == expected
