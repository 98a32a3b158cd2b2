"""The Slurm backend's batch script, the QOS limits of a VC and the ``sacctmgr`` commands for them.

``batch_script`` returns the text ``sbatch`` reads. Every value that came from a user (command,
env values, the code directory) is passed through ``shlex.quote``; names that appear in
``#SBATCH`` lines (job name, account, QOS, partition, directories) are checked against strict
patterns first, because sbatch reads those lines itself, without a shell. Several nodes (or
MPI): ``srun``, one task per node (MPI: per rank); PyTorch runs ``srun torchrun`` with a c10d
rendezvous on the first node of the allocation. One node: the batch step runs the program (or
``torchrun --standalone``) itself, saving a job step's start.

Nothing but bash and Slurm is needed on the compute nodes: each rank writes
``<attempt dir>/logs/rank-<global rank>.log`` (PyTorch: torchrun runs a bash shim per process;
others: ``srun --output=.../rank-%t.log``), and a ``trap ... EXIT`` writes
``<attempt dir>/exit`` (``{"exit_code", "end", "reason"}``, like the local wrapper's) through a
temporary file and ``mv``, so a reader never sees half a record.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence

from ..vcs.devices import DEVICES, DeviceMap
from ..vcs.quantities import Resources
from .devices import BuildError, device_map
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
    spec: JobSpec,
    job_id: str,
    account: str,
    qos: str,
    partition: str,
    workdir: str,
    devices: Mapping[str, DeviceMap] = DEVICES,
    attempt_dir: str | None = None,
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
        f"--output={attempt_dir or workdir}/slurm-%j.out",
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


# Fixed bash text (no user values): the exit record, written on any exit of the batch script. A
# SIGTERM (scancel, the time limit) exits 143 through the EXIT trap; the poller adds Slurm's reason.
EXIT_TRAP = """yitong_exit() {{
  local rc=$? reason=
  [ -z "${{yitong_signal:-}}" ] || reason="stopped by SIG$yitong_signal"
  printf '{{"exit_code": %d, "end": "%s", "reason": "%s"}}\\n' "$rc" "$(date -u +%Y-%m-%dT%H:%M:%S.%6N+00:00)" "$reason" >{tmp}
  mv -f -- {tmp} {exit}
}}
trap yitong_exit EXIT
trap 'yitong_signal=TERM; exit 143' TERM
trap 'yitong_signal=INT; exit 130' INT"""

# torchrun --no-python runs this per process: its output goes to <logs>/rank-$RANK.log ($0 = <logs>)
RANK_SHIM = 'exec "$@" >>"$0/rank-$RANK.log" 2>&1'


def _path(what: str, value: str) -> str:
    if not PATH_RE.match(value) or "/../" in f"{value}/" or "/./" in f"{value}/":
        raise BuildError(f"{what} {value!r}: use an absolute path of letters, digits and _.@+/-")
    return value


def batch_script(
    spec: JobSpec,
    job_id: str | int,
    account: str = "",
    qos: str = "",
    partition: str = "",
    workdir: str = "/tmp",
    input_paths: Mapping[str, str] | None = None,
    devices: Mapping[str, DeviceMap] = DEVICES,
    *,
    attempt_dir: str | None = None,
    cwd: str | None = None,
) -> str:
    """The batch script of one attempt. ``workdir`` is the job's directory (outputs under it, the
    batch step's ``--chdir``); ``attempt_dir`` (default ``workdir``) gets ``slurm-<id>.out``,
    ``logs/rank-<r>.log`` and ``exit``; ``cwd`` (any path, quoted) is where the ranks start."""
    job_id = str(job_id)
    if not JOB_ID_RE.match(job_id):
        raise BuildError(f"job id {job_id!r} is not a plain identifier")
    _path("job directory", workdir)
    here = _path("attempt directory", attempt_dir or workdir)
    logs = f"{here}/logs"
    env = job_env(spec, job_id, output_dir=f"{workdir}/{spec.outputs}", input_paths=input_paths or {}, devices=devices)
    lines = ["#!/bin/bash"]
    lines += [f"#SBATCH {opt}" for opt in sbatch_options(spec, job_id, account, qos, partition, workdir, devices, here)]
    lines += ["set -euo pipefail"]
    lines += [EXIT_TRAP.format(tmp=shlex.quote(f"{here}/exit.tmp"), exit=shlex.quote(f"{here}/exit"))]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    lines += [
        'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        'export YITONG_MASTER_ADDR="$head"',
        'YITONG_HOSTS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)',
        "export YITONG_HOSTS",
        f'mkdir -p -- "$YITONG_OUTPUT_DIR" {shlex.quote(logs)}',
    ]
    if cwd:
        lines.append(f"cd -- {shlex.quote(cwd)}")
    argv = " ".join(shlex.quote(a) for a in user_argv(spec))
    shim = "bash -c " + shlex.quote(RANK_SHIM) + " " + shlex.quote(logs) + " "
    if spec.nodes == 1 and spec.framework is not Framework.mpi:
        # one node: the batch step runs it directly (a step of its own costs about a second per job)
        lines.append("export YITONG_NODE_RANK=0")
        if spec.framework is Framework.pytorch:
            body = (
                f"torchrun --standalone --nnodes=1 --nproc-per-node={spec.procs_per_node or 1} --no-python "
                f"{shim}{argv} >{shlex.quote(logs + '/node-0.log')}"
            )
        else:
            body = f"{argv} >{shlex.quote(logs + '/rank-0.log')}"
        lines.append(body + " 2>&1 </dev/null")
        return "\n".join(lines) + "\n"
    tasks = (spec.procs_per_node or 1) if spec.framework is Framework.mpi else 1
    # PyTorch: srun's output is torchrun's own (per node); the ranks log through the shim
    output = f"{logs}/node-%n.log" if spec.framework is Framework.pytorch else f"{logs}/rank-%t.log"
    srun = ["srun", "--kill-on-bad-exit=1", f"--nodes={spec.nodes}", f"--ntasks-per-node={tasks}", f"--output={output}"]
    body = " ".join(shlex.quote(a) for a in srun)
    # each node learns its rank from SLURM_NODEID through a fixed text; the user's argv follows "$@"
    body += " bash -c " + shlex.quote('export YITONG_NODE_RANK="$SLURM_NODEID"; exec "$@"') + " yitong-node "
    if spec.framework is Framework.pytorch:
        body += launcher(spec) + shim
    lines.append(body + argv)
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


def sacctmgr_commands(
    vcs: Mapping[str, Resources],
    users: Sequence[str],
    account: str = "{vc}",
    qos: str = "yt-{vc}",
    devices: Mapping[str, DeviceMap] = DEVICES,
) -> list[list[str]]:
    """The ``sacctmgr`` argv lists that give each VC a Slurm account and a QOS whose ``GrpTRES``
    is the VC's quota, and let ``users`` (the service's user: jobs are submitted as it) submit
    under each account. ``account``/``qos`` are the backend's templates (``{vc}``). Needs slurmdbd."""
    out: list[list[str]] = []
    for vc, quota in sorted(vcs.items()):
        acct, q = _name("account", account.format(vc=vc)), _name("QOS", qos.format(vc=vc))
        out.append(["sacctmgr", "-i", "add", "qos", q])
        limit = qos_grptres(quota, devices)
        if limit:
            out.append(["sacctmgr", "-i", "modify", "qos", "where", f"name={q}", "set", f"GrpTRES={limit}"])
        out.append(["sacctmgr", "-i", "add", "account", acct, f"Description=Yitong VC {vc}", "Organization=yitong"])
        out.append(
            ["sacctmgr", "-i", "modify", "account", "where", f"name={acct}", "set", f"QOS={q}", f"DefaultQOS={q}"]
        )
        for user in users:
            out.append(["sacctmgr", "-i", "add", "user", _name("user", user), f"Account={acct}"])
    return out
