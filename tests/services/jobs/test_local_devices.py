"""Device mapping, backend device checks and the local backend's argv/env (pure)."""

import pytest

from yitong_services.jobs.devices import BuildError, check_backend_devices, dist_backend
from yitong_services.jobs.local import local_command
from yitong_services.jobs.spec import spec_from_dict

BASE = {
    "name": "mnist",
    "vc": "vision",
    "environment": {"kernel": "python3"},
    "command": ["python", "train.py", "--lr", "0.1"],
}
GPU2 = {"accelerator": {"type": "nvidia.com/gpu", "count": 2}}
NPU1 = {"accelerator": {"type": "huawei.com/Ascend910", "count": 1}}


@pytest.mark.parametrize(
    "change,inventory,reason",
    [
        ({}, {}, None),
        (GPU2, {"nvidia.com/gpu": 8}, None),
        (NPU1, {"cpu": 64, "nvidia.com/gpu": 8}, "this cluster has no huawei.com/Ascend910"),
        (NPU1, {"huawei.com/Ascend910": 0}, "this cluster has no huawei.com/Ascend910"),
        (
            {**GPU2, "nodes": 3},
            {"nvidia.com/gpu": 4},
            "this cluster has 4 nvidia.com/gpu; the job asks for 6 (3 nodes x 2)",
        ),
    ],
)
def test_check_backend_devices(change, inventory, reason):
    assert check_backend_devices(spec_from_dict({**BASE, **change}), inventory) == reason


@pytest.mark.parametrize("change,backend", [({}, "gloo"), (GPU2, "nccl"), (NPU1, "hccl")])
def test_dist_backend(change, backend):
    assert dist_backend(spec_from_dict({**BASE, **change})) == backend


PLATFORM_ENV = {
    "YITONG_JOB_ID": "7",
    "YITONG_JOB_NAME": "mnist",
    "YITONG_VC": "vision",
    "YITONG_NNODES": "1",
    "YITONG_MASTER_PORT": "29500",
    "YITONG_OUTPUT_DIR": "/jobs/7/outputs",
    "YITONG_MASTER_ADDR": "127.0.0.1",
    "YITONG_HOSTS": "127.0.0.1",
    "YITONG_NODE_RANK": "0",
}


@pytest.mark.parametrize(
    "change,devices,argv,env",
    [
        (
            {"framework": "pytorch"},
            [],
            [
                "torchrun",
                "--standalone",
                "--nnodes=1",
                "--nproc-per-node=1",
                "--no-python",
                "python",
                "train.py",
                "--lr",
                "0.1",
            ],
            {
                "YITONG_NPROC_PER_NODE": "1",
                "YITONG_DIST_BACKEND": "gloo",
                "CUDA_VISIBLE_DEVICES": "",
                "ASCEND_RT_VISIBLE_DEVICES": "",
                "ASCEND_VISIBLE_DEVICES": "",
            },
        ),
        (
            {"framework": "pytorch", **GPU2},
            [2, 3],
            [
                "torchrun",
                "--standalone",
                "--nnodes=1",
                "--nproc-per-node=2",
                "--no-python",
                "python",
                "train.py",
                "--lr",
                "0.1",
            ],
            {
                "YITONG_NPROC_PER_NODE": "2",
                "YITONG_DIST_BACKEND": "nccl",
                "CUDA_VISIBLE_DEVICES": "2,3",
                "ASCEND_RT_VISIBLE_DEVICES": "",
                "ASCEND_VISIBLE_DEVICES": "",
            },
        ),
        (
            {"framework": "mindspore", **NPU1, "command": "python train.py; echo done"},
            [5],
            ["bash", "-c", "python train.py; echo done"],
            {
                "YITONG_NPROC_PER_NODE": "1",
                "YITONG_DIST_BACKEND": "hccl",
                "CUDA_VISIBLE_DEVICES": "",
                "ASCEND_RT_VISIBLE_DEVICES": "5",
                "ASCEND_VISIBLE_DEVICES": "5",
            },
        ),
        (
            {"framework": "mpi", "procs_per_node": 4, "env": {"OMP_NUM_THREADS": 1}},
            [],
            ["mpirun", "-np", "4", "python", "train.py", "--lr", "0.1"],
            {
                "OMP_NUM_THREADS": "1",
                "YITONG_NPROC_PER_NODE": "4",
                "YITONG_DIST_BACKEND": "gloo",
                "CUDA_VISIBLE_DEVICES": "",
                "ASCEND_RT_VISIBLE_DEVICES": "",
                "ASCEND_VISIBLE_DEVICES": "",
            },
        ),
    ],
)
def test_local_command(change, devices, argv, env):
    got_argv, got_env = local_command(spec_from_dict({**BASE, **change}), 7, "/jobs/7", devices)
    assert got_argv == argv
    assert got_env == {**PLATFORM_ENV, **env}


def test_local_inputs():
    spec = spec_from_dict(
        {**BASE, "inputs": [{"dataset": "vision/mnist@3"}, {"dataset": "nlp/wiki-en", "mount": "wiki-en"}]}
    )
    _, env = local_command(
        spec, 7, "/jobs/7", [], {"mnist": "/data/materialized/aa", "wiki-en": "/data/materialized/bb"}
    )
    assert (env["YITONG_INPUT_MNIST"], env["YITONG_INPUT_WIKI_EN"]) == (
        "/data/materialized/aa",
        "/data/materialized/bb",
    )
    with pytest.raises(ValueError, match="no materialised path for input mount"):
        local_command(spec, 7, "/jobs/7", [], {"mnist": "/x"})


@pytest.mark.parametrize(
    "change,devices,message",
    [
        ({"nodes": 2}, [], "the local backend runs single-node jobs; this job asks for 2 nodes"),
        ({"accelerator": {"type": "amd.com/gpu", "count": 1}}, [0], "this machine has no amd.com/gpu"),
        (GPU2, [0], "the job needs 2 device(s) per node, 1 were assigned"),
    ],
)
def test_local_refusals(change, devices, message):
    with pytest.raises((BuildError, ValueError), match=message.replace("(", r"\(").replace(")", r"\)")):
        local_command(spec_from_dict({**BASE, **change}), 7, "/jobs/7", devices)
