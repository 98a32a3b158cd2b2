"""Accelerator types and how each backend names them.

One spec field (``accelerator: {type: nvidia.com/gpu, count: 4}``) becomes a device-plugin
resource plus node placement on Kubernetes, a GRES on Slurm, and visible-device variables on the
local backend. The defaults match the spawner's (``YitongSpawner.accelerator_*`` traits), so a
notebook and a job with the same accelerator land on the same kind of node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..vcs.quantities import Amount
from .spec import JobSpec


@dataclass(frozen=True)
class DeviceMap:
    type: str  # also the Kubernetes device-plugin resource name
    gres: str  # Slurm GRES name: --gres=<gres>:<count>
    visible_env: tuple[str, ...]  # local backend: variables listing visible devices
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    dist_backend: str = "gloo"  # torch.distributed backend the device wants
    flavor: str = ""  # Kueue ResourceFlavor name


DEVICES: Mapping[str, DeviceMap] = {
    "nvidia.com/gpu": DeviceMap(
        type="nvidia.com/gpu",
        gres="gpu",
        visible_env=("CUDA_VISIBLE_DEVICES",),
        node_selector={"accelerator": "nvidia"},
        tolerations=({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},),
        dist_backend="nccl",
        flavor="nvidia",
    ),
    "huawei.com/Ascend910": DeviceMap(
        type="huawei.com/Ascend910",
        gres="npu",
        visible_env=("ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"),
        node_selector={"accelerator": "huawei-Ascend910"},
        tolerations=({"key": "huawei.com/Ascend910", "operator": "Exists", "effect": "NoSchedule"},),
        dist_backend="hccl",
        flavor="ascend910",
    ),
}


class BuildError(ValueError):
    """The job cannot be expressed on this backend (a sentence for the user; a 4xx at submit)."""


def device_map(kind: str, devices: Mapping[str, DeviceMap] = DEVICES) -> DeviceMap:
    try:
        return devices[kind]
    except KeyError:
        raise BuildError(f"Yitong does not know how to place {kind} on this backend") from None


def dist_backend(spec: JobSpec, devices: Mapping[str, DeviceMap] = DEVICES) -> str:
    """``nccl`` for NVIDIA GPUs, ``hccl`` for Ascend, ``gloo`` on CPU."""
    if spec.accelerator is None:
        return "gloo"
    return device_map(spec.accelerator.type, devices).dist_backend


def check_backend_devices(spec: JobSpec, inventory: Mapping[str, Amount], where: str = "this cluster") -> str | None:
    """Why the backend cannot run the job's devices, or None.

    ``inventory`` is the backend's total capacity (``backends.<name>.inventory``); a device type
    absent or at 0 is refused at submit rather than left pending forever.
    """
    if spec.accelerator is None:
        return None
    kind, per_node = spec.accelerator.type, spec.accelerator.count
    have = int(inventory.get(kind, 0) or 0)
    if have <= 0:
        return f"{where} has no {kind}"
    want = per_node * spec.nodes
    if want > have:
        return f"{where} has {have} {kind}; the job asks for {want} ({spec.nodes} nodes x {per_node})"
    return None
