"""Jobs on the accelerator table: which device map a job uses, its torch backend, and whether the
backend's inventory can run it. The table itself is a fact of the cluster: ``vcs/devices.py``
(the ``devices`` section of the settings), shared with the notebooks' placement.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..vcs.devices import DEVICES, DeviceMap
from ..vcs.quantities import Amount
from .spec import JobSpec


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
