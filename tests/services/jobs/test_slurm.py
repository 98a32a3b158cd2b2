"""The Slurm batch script and QOS limits: literal scripts, `bash -n`, hostile values stay inert."""

import shlex
import subprocess

import pytest

from yitong_services.jobs.devices import BuildError
from yitong_services.jobs.slurm import batch_script, qos_grptres, slurm_time
from yitong_services.jobs.spec import spec_from_dict

GI = 2**30
BASE = {"name": "mnist", "vc": "vision", "environment": {"image": "x"}, "command": ["python", "train.py"]}
HOSTILE = ["; rm -rf /", "$(touch /tmp/pwned)", "`id`", "it's \"quoted\"", "line1\nline2", "$HOME ${PATH}", "*", "--x=$head"]


def test_script_literal():
    spec = spec_from_dict({**BASE, "framework": "pytorch", "nodes": 2, "cpu": 8, "memory": "32Gi",
                           "accelerator": {"type": "nvidia.com/gpu", "count": 4}, "max_run_time": "1h30m",
                           "env": {"NCCL_DEBUG": "INFO"}, "inputs": [{"dataset": "vision/mnist@3"}]})
    script = batch_script(spec, 42, "vision", "yt-vision", "gpu", "/data/jobs/42", {"mnist": "/data/materialized/ab"})
    assert script == """#!/bin/bash
#SBATCH --job-name=yt-42-mnist
#SBATCH --account=vision
#SBATCH --qos=yt-vision
#SBATCH --partition=gpu
#SBATCH --chdir=/data/jobs/42
#SBATCH --output=/data/jobs/42/slurm-%j.out
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32768M
#SBATCH --gres=gpu:4
#SBATCH --time=0-01:30:00
set -euo pipefail
export NCCL_DEBUG=INFO
export YITONG_JOB_ID=42
export YITONG_JOB_NAME=mnist
export YITONG_VC=vision
export YITONG_NNODES=2
export YITONG_NPROC_PER_NODE=4
export YITONG_MASTER_PORT=29500
export YITONG_DIST_BACKEND=nccl
export YITONG_OUTPUT_DIR=/data/jobs/42/outputs
export YITONG_INPUT_MNIST=/data/materialized/ab
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export YITONG_MASTER_ADDR="$head"
mkdir -p -- "$YITONG_OUTPUT_DIR" /data/jobs/42/logs
srun --kill-on-bad-exit=1 --nodes=2 --ntasks-per-node=1 --output=/data/jobs/42/logs/node-%n.log \
bash -c 'export YITONG_NODE_RANK="$SLURM_NODEID"; exec "$@"' yitong-node \
torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d --rdzv-id="$SLURM_JOB_ID" \
--rdzv-endpoint="$head:29500" --no-python python train.py
""".replace("\\\n", "")


@pytest.mark.parametrize("change,lines", [
    ({}, ["#SBATCH --ntasks-per-node=1", "#SBATCH --cpus-per-task=1", "#SBATCH --mem=2048M"]),
    ({"framework": "mpi", "procs_per_node": 4, "cpu": 8}, ["#SBATCH --ntasks-per-node=4", "#SBATCH --cpus-per-task=2"]),
    ({"accelerator": {"type": "huawei.com/Ascend910", "count": 8}}, ["#SBATCH --gres=npu:8"]),
    ({"priority": "low"}, ["#SBATCH --nice=100"]),
    ({"max_run_time": "2d"}, ["#SBATCH --time=2-00:00:00"]),
    ({"command": "python a.py && python b.py"}, ["yitong-node bash -lc 'python a.py && python b.py'"]),
])
def test_script_options(change, lines):
    script = batch_script(spec_from_dict({**BASE, **change}), 1, workdir="/w")
    for line in lines:
        assert line in script, line
    assert "--account" not in script and "--qos" not in script and "--partition" not in script


def _bash_n(script: str) -> None:
    done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_are_inert(value):
    spec = spec_from_dict({**BASE, "framework": "pytorch", "command": ["python", "train.py", value], "env": {"EVIL": value}})
    script = batch_script(spec, 9, workdir="/w")
    _bash_n(script)
    export = next(line for line in script.split("export EVIL=", 1)[1:])
    # the export line (possibly spanning lines) parses back to exactly the value, as one word
    words = shlex.split("EVIL=" + export.split("\nexport YITONG_JOB_ID=")[0])
    assert words == ["EVIL=" + value]
    last = script.rstrip("\n").split("yitong-node ", 1)[1]
    assert shlex.split(last)[-1] == value
    # bash itself sees the argv unchanged: run the srun line's words with srun/torchrun replaced by printf
    probe = "head=h0; SLURM_JOB_ID=1; printf '%s\\0' " + last.split("--no-python ", 1)[1]
    done = subprocess.run(["bash", "-c", probe], capture_output=True, timeout=20)
    assert done.stdout.split(b"\0")[:-1] == [b"python", b"train.py", value.encode()]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_shell_command_is_one_word(value):
    script = batch_script(spec_from_dict({**BASE, "command": f"echo {value}"}), 9, workdir="/w")
    _bash_n(script)
    assert shlex.split(script.rstrip("\n").split("yitong-node ", 1)[1]) == ["bash", "-lc", f"echo {value}"]


@pytest.mark.parametrize("kwargs,message", [
    ({"account": "vision;id"}, "Slurm account 'vision;id'"),
    ({"qos": "a b"}, "Slurm QOS 'a b'"),
    ({"partition": "$(id)"}, "Slurm partition '$(id)'"),
    ({"workdir": "/tmp/a b"}, "job directory '/tmp/a b'"),
    ({"workdir": "relative"}, "job directory 'relative'"),
    ({"workdir": "/tmp/../etc"}, "job directory '/tmp/../etc'"),
    ({"workdir": "/tmp/%j"}, "job directory '/tmp/%j'"),
    ({"job_id": "1;id"}, "job id '1;id'"),
])
def test_refusals(kwargs, message):
    kwargs = {"job_id": 1, "workdir": "/w", **kwargs}
    with pytest.raises(BuildError, match=message.replace("$", r"\$").replace("(", r"\(").replace(")", r"\)")):
        batch_script(spec_from_dict(BASE), **kwargs)


@pytest.mark.parametrize("quota,text", [
    ({"cpu": 8.0, "memory": 16 * GI, "nvidia.com/gpu": 2}, "cpu=8,mem=16384M,gres/gpu=2"),
    ({"cpu": 0.5, "memory": 512 * 2**20}, "cpu=1,mem=512M"),
    ({"huawei.com/Ascend910": 8, "cpu": 4.0}, "cpu=4,gres/npu=8"),
    ({}, ""),
])
def test_qos_grptres(quota, text):
    assert qos_grptres(quota) == text


def test_qos_unknown_device():
    with pytest.raises(BuildError, match="does not know how to place amd.com/gpu"):
        qos_grptres({"amd.com/gpu": 1})


@pytest.mark.parametrize("seconds,text", [(60, "0-00:01:00"), (5400, "0-01:30:00"), (90061, "1-01:01:01")])
def test_slurm_time(seconds, text):
    assert slurm_time(seconds) == text
