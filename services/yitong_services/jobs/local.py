"""The local backend's launch: one machine, processes, devices chosen by visible-device variables.

``local_command`` returns an argv (for ``asyncio.create_subprocess_exec``, never a shell) and
the environment to add to the runner's own. PyTorch runs under ``torchrun --standalone`` (a
c10d store on localhost; gloo on CPU), MPI under ``mpirun -np N``, everything else as given.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from ..vcs.devices import DEVICES, DeviceMap
from .devices import BuildError
from .launch import job_env, user_argv
from .spec import Framework, JobSpec


def launcher_argv(
    spec: JobSpec,
    torchrun: Sequence[str] = ("torchrun",),
    mpirun: Sequence[str] = ("mpirun",),
) -> list[str]:
    procs = spec.procs_per_node or 1
    if spec.framework is Framework.pytorch:
        return [*torchrun, "--standalone", "--nnodes=1", f"--nproc-per-node={procs}", "--no-python", *user_argv(spec)]
    if spec.framework is Framework.mpi:
        return [*mpirun, "-np", str(procs), *user_argv(spec)]
    return user_argv(spec)


def visible_device_env(
    spec: JobSpec, visible_devices: Sequence[int | str], devices: Mapping[str, DeviceMap] = DEVICES
) -> dict[str, str]:
    """Every known device kind's variables: the allocated indices for the job's kind, empty for others
    (so a CPU job on a GPU machine sees no GPU)."""
    want = spec.accelerator.count if spec.accelerator else 0
    if len(visible_devices) != want:
        raise ValueError(f"the job needs {want} device(s) per node, {len(visible_devices)} were assigned")
    env: dict[str, str] = {}
    for kind, dev in sorted(devices.items()):
        chosen = spec.accelerator is not None and spec.accelerator.type == kind
        for name in dev.visible_env:
            env[name] = ",".join(str(i) for i in visible_devices) if chosen else ""
    return env


def local_command(
    spec: JobSpec,
    job_id: str | int,
    workdir: str,
    visible_devices: Sequence[int | str] = (),
    input_paths: Mapping[str, str] | None = None,
    *,
    torchrun: Sequence[str] = ("torchrun",),
    mpirun: Sequence[str] = ("mpirun",),
    devices: Mapping[str, DeviceMap] = DEVICES,
) -> tuple[list[str], dict[str, str]]:
    """``(argv, env)`` for one local job; ``workdir`` is the job's directory (outputs live under it)."""
    if spec.nodes != 1:
        raise BuildError(f"the local backend runs single-node jobs; this job asks for {spec.nodes} nodes")
    if spec.accelerator is not None and spec.accelerator.type not in devices:
        raise BuildError(f"this machine has no {spec.accelerator.type}")
    env = job_env(
        spec,
        job_id,
        output_dir=posixpath.join(workdir, spec.outputs),
        input_paths=input_paths or {},
        master_addr="127.0.0.1",
        node_rank="0",
        hosts=["127.0.0.1"],
        devices=devices,
    )
    env.update(visible_device_env(spec, visible_devices, devices))
    return launcher_argv(spec, torchrun, mpirun), env
