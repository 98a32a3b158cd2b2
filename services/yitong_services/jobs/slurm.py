"""The Slurm backend's batch script and the QOS limits of a VC.

``batch_script`` returns the text given to ``sbatch`` on stdin. Every value that came from a
user (command, env values, paths) is passed through ``shlex.quote``; names that appear in
``#SBATCH`` lines (job name, account, QOS, partition, workdir) are checked against strict
patterns first, because sbatch reads those lines itself, without a shell. One task per node;
PyTorch runs ``srun torchrun`` with a c10d rendezvous on the first node of the allocation.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping

from ..quantities import Resources
from .devices import DEVICES, BuildError, DeviceMap, device_map
from .launch import RDZV_PORT, job_env, user_argv
from .spec import Framework, JobSpec

MIB = 2**20
SLURM_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
PATH_RE = re.compile(r"^/[A-Za-z0-9_.@+/-]*$")
JOB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


def _name(what: str, value: str) -> str:
    if not SLURM_NAME_RE.match(value):
        raise BuildError(f"Slurm {what} {value!r}: use letters, digits, '_', '.', '-'")
    return value


def slurm_time(seconds: int) -> str:
    """``--time`` as ``D-HH:MM:SS`` (minutes are rounded up by Slurm anyway)."""
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def sbatch_options(
    spec: JobSpec, job_id: str, account: str, qos: str, partition: str, workdir: str,
    devices: Mapping[str, DeviceMap] = DEVICES,
) -> list[str]:
    tasks = (spec.procs_per_node or 1) if spec.framework is Framework.mpi else 1
    opts = [f"--job-name=yt-{job_id}-{spec.name}"]
    if account:
        opts.append(f"--account={_name('account', account)}")
    if qos:
        opts.append(f"--qos={_name('QOS', qos)}")
    if partition:
        opts.append(f"--partition={_name('partition', partition)}")
    opts += [
        f"--chdir={workdir}",
        f"--output={workdir}/slurm-%j.out",
        f"--nodes={spec.nodes}",
        f"--ntasks-per-node={tasks}",
        f"--cpus-per-task={max(1, math.ceil(spec.cpu / tasks))}",
        f"--mem={max(1, math.ceil(spec.memory / MIB))}M",
    ]
    if spec.accelerator is not None:
        opts.append(f"--gres={device_map(spec.accelerator.type, devices).gres}:{spec.accelerator.count}")
    if spec.max_run_time:
        opts.append(f"--time={slurm_time(spec.max_run_time)}")
    if spec.priority_value < 0:
        opts.append(f"--nice={-spec.priority_value}")  # users may only lower their priority
    return opts


def launcher(spec: JobSpec) -> str:
    """Shell text (platform-made, no user values) that precedes the user's quoted argv on every node.

    PyTorch: ``torchrun`` with a c10d rendezvous on the first node (no node rank needed);
    MPI: srun itself starts ``procs_per_node`` ranks per node; others: the argv once per node.
    """
    if spec.framework is not Framework.pytorch:
        return ""
    return (
        f"torchrun --nnodes={spec.nodes} --nproc-per-node={spec.procs_per_node or 1}"
        f' --rdzv-backend=c10d --rdzv-id="$SLURM_JOB_ID" --rdzv-endpoint="$head:{RDZV_PORT}" --no-python '
    )


def batch_script(
    spec: JobSpec,
    job_id: str | int,
    account: str = "",
    qos: str = "",
    partition: str = "",
    workdir: str = "/tmp",
    input_paths: Mapping[str, str] | None = None,
    devices: Mapping[str, DeviceMap] = DEVICES,
) -> str:
    job_id = str(job_id)
    if not JOB_ID_RE.match(job_id):
        raise BuildError(f"job id {job_id!r} is not a plain identifier")
    if not PATH_RE.match(workdir) or "/../" in f"{workdir}/":
        raise BuildError(f"job directory {workdir!r}: use an absolute path of letters, digits and _.@+/-")
    env = job_env(spec, job_id, output_dir=f"{workdir}/{spec.outputs}", input_paths=input_paths or {}, devices=devices)
    lines = ["#!/bin/bash"]
    lines += [f"#SBATCH {opt}" for opt in sbatch_options(spec, job_id, account, qos, partition, workdir, devices)]
    lines += ["set -euo pipefail"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    lines += [
        'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        'export YITONG_MASTER_ADDR="$head"',
        f'mkdir -p -- "$YITONG_OUTPUT_DIR" {shlex.quote(workdir + "/logs")}',
    ]
    tasks = (spec.procs_per_node or 1) if spec.framework is Framework.mpi else 1
    srun = ["srun", "--kill-on-bad-exit=1", f"--nodes={spec.nodes}", f"--ntasks-per-node={tasks}",
            f"--output={workdir}/logs/node-%n.log"]
    body = " ".join(shlex.quote(a) for a in srun)
    # each node learns its rank from SLURM_NODEID through a fixed text; the user's argv follows "$@"
    body += " bash -c " + shlex.quote('export YITONG_NODE_RANK="$SLURM_NODEID"; exec "$@"') + " yitong-node "
    body += launcher(spec) + " ".join(shlex.quote(a) for a in user_argv(spec))
    lines.append(body)
    return "\n".join(lines) + "\n"


def qos_grptres(quota: Resources, devices: Mapping[str, DeviceMap] = DEVICES) -> str:
    """A VC quota as a QOS ``GrpTRES`` value: ``{"cpu": 8, "memory": 16Gi, "nvidia.com/gpu": 2}``
    -> ``cpu=8,mem=16384M,gres/gpu=2``. A device with no GRES mapping is an error."""
    parts: list[str] = []
    for name, amount in sorted(quota.items(), key=lambda kv: (kv[0] not in ("cpu", "memory"), kv[0])):
        if name == "cpu":
            parts.append(f"cpu={math.ceil(float(amount))}")
        elif name == "memory":
            parts.append(f"mem={math.ceil(int(amount) / MIB)}M")
        else:
            parts.append(f"gres/{device_map(name, devices).gres}={int(amount)}")
    return ",".join(parts)
