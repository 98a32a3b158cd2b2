"""What every backend gives a job's processes: the user's argv and the ``YITONG_*`` variables.

The platform's values travel as environment variables, never as text inside the user's command:

| variable | value |
|---|---|
| ``YITONG_JOB_ID``, ``YITONG_JOB_NAME``, ``YITONG_VC`` | the job's id, name and VC |
| ``YITONG_NNODES``, ``YITONG_NODE_RANK``, ``YITONG_NPROC_PER_NODE`` | the job's shape (rank set per node by the backend) |
| ``YITONG_MASTER_ADDR``, ``YITONG_MASTER_PORT`` | node 0's address and the rendezvous port |
| ``YITONG_HOSTS`` | every node's address, comma-separated, in node-rank order (imported OpenPAI jobs read it) |
| ``YITONG_DIST_BACKEND`` | ``nccl`` / ``hccl`` / ``gloo`` |
| ``YITONG_OUTPUT_DIR`` | the job's writable outputs directory |
| ``YITONG_INPUT_<MOUNT>`` | the read-only directory of each input (``mount`` upper-cased, ``-`` -> ``_``) |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..vcs.devices import DEVICES, DeviceMap
from .devices import dist_backend
from .spec import JobSpec

RDZV_PORT = 29500


def user_argv(spec: JobSpec) -> list[str]:
    """The program each worker runs: the argv as given, or ``bash -c <text>`` for a string.

    Not a login shell (``-l``): a login profile resets ``PATH`` (Debian's ``/etc/profile`` does
    for root) and prints its noise into the job's log, so ``python train.py`` would not find the
    interpreter the platform put first on ``PATH``."""
    return ["bash", "-c", spec.command] if isinstance(spec.command, str) else list(spec.command)


def input_env_name(mount: str) -> str:
    return "YITONG_INPUT_" + mount.upper().replace("-", "_")


def check_inputs(spec: JobSpec, paths: Mapping[str, str]) -> None:
    """Every input mount needs a materialised path (the runner resolves ``vc/name@ref`` first)."""
    missing = [i.mount for i in spec.inputs if i.mount not in paths]
    if missing:
        raise ValueError(f"no materialised path for input mount(s) {', '.join(map(str, missing))}")


def job_env(
    spec: JobSpec,
    job_id: str | int,
    *,
    output_dir: str,
    input_paths: Mapping[str, str],
    master_addr: str | None = None,
    node_rank: str | None = None,
    hosts: Sequence[str] | None = None,
    devices: Mapping[str, DeviceMap] = DEVICES,
) -> dict[str, str]:
    """User ``env`` first, then the platform's variables (the spec refuses ``YITONG_*`` names)."""
    check_inputs(spec, input_paths)
    env = dict(spec.env)
    env.update(
        {
            "YITONG_JOB_ID": str(job_id),
            "YITONG_JOB_NAME": spec.name,
            "YITONG_VC": spec.vc,
            "YITONG_NNODES": str(spec.nodes),
            "YITONG_NPROC_PER_NODE": str(spec.procs_per_node),
            "YITONG_MASTER_PORT": str(RDZV_PORT),
            "YITONG_DIST_BACKEND": dist_backend(spec, devices),
            "YITONG_OUTPUT_DIR": output_dir,
        }
    )
    if master_addr is not None:
        env["YITONG_MASTER_ADDR"] = master_addr
    if hosts is not None:
        env["YITONG_HOSTS"] = ",".join(hosts)
    if node_rank is not None:
        env["YITONG_NODE_RANK"] = node_rank
    for item in spec.inputs:
        env[input_env_name(str(item.mount))] = input_paths[str(item.mount)]
    return env
