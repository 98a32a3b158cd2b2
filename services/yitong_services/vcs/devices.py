"""The one accelerator table: how each device type is placed on every backend.

One spec field (``accelerator: {type: nvidia.com/gpu, count: 4}``) becomes a device-plugin
resource plus a node selector and tolerations on Kubernetes, a GRES on Slurm, and visible-device
variables on the local backend, for notebooks (``GET /spawn-options`` sends each profile's
``placement`` to the spawner) and jobs (``jobs/kube.py``, ``jobs/slurm.py``, ``jobs/local.py``)
alike. It is a fact of the cluster: the ``devices`` section of the settings file, merged over
:data:`DEFAULT_DEVICES` type by type (``null`` removes a type).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from .quantities import check_resource_name

GRES_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # safe on an #SBATCH line
ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY_RE = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}$")
LABEL_VALUE_RE = re.compile(rf"^({_LABEL_NAME})?$")
FLAVOR_RE = re.compile(r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$")


def _matching(pattern: re.Pattern[str], what: str):  # type: ignore[no-untyped-def]
    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"{value!r} is not a valid {what}")
        return value

    return AfterValidator(check)


def device_type(value: str) -> str:
    check_resource_name(value)
    if value in ("cpu", "memory"):
        raise ValueError(f"{value!r} is not a device type: use a device-plugin name like nvidia.com/gpu")
    return value


DeviceType = Annotated[str, AfterValidator(device_type)]
EnvName = Annotated[str, _matching(ENV_RE, "environment variable name")]
LabelKey = Annotated[str, _matching(LABEL_KEY_RE, "Kubernetes label key")]
LabelValue = Annotated[str, _matching(LABEL_VALUE_RE, "Kubernetes label value")]


class Toleration(BaseModel):
    """A Kubernetes Toleration; only the fields given are sent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: Annotated[str, _matching(LABEL_KEY_RE, "taint key")] | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: int | None = None

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class DeviceMap(BaseModel):
    """One accelerator type (``type``, also the Kubernetes device-plugin resource) on each backend."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: DeviceType
    gres: Annotated[str, _matching(re.compile(rf"^$|{GRES_RE.pattern}"), "Slurm GRES name")] = Field(
        "", description="Slurm GRES name: 2 devices -> --gres=<gres>:2; empty: not on Slurm"
    )
    visible_env: tuple[EnvName, ...] = Field(
        (), description="local backend: variables listing the visible devices (0..n-1); empty for other types"
    )
    node_selector: dict[LabelKey, LabelValue] = Field(default_factory=dict, description="Kubernetes node selector")
    tolerations: tuple[Toleration, ...] = Field((), description="Kubernetes tolerations")
    dist_backend: Literal["gloo", "nccl", "hccl", "mpi"] = Field("gloo", description="torch.distributed backend")
    flavor: Annotated[str, _matching(FLAVOR_RE, "Kueue ResourceFlavor name")] = Field(
        "", description="Kueue ResourceFlavor name; empty: derived from the type"
    )

    @property
    def flavor_name(self) -> str:
        return self.flavor or self.type.replace("/", "-").replace(".", "-").lower()

    def toleration_manifests(self) -> list[dict[str, Any]]:
        return [t.manifest() for t in self.tolerations]


#: today's table, as the settings file spells it (``devices:`` in yitong.example.yaml)
DEFAULT_DEVICE_SETTINGS: Mapping[str, Mapping[str, Any]] = {
    "nvidia.com/gpu": {
        "gres": "gpu",
        "visible_env": ["CUDA_VISIBLE_DEVICES"],
        "node_selector": {"accelerator": "nvidia"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "dist_backend": "nccl",
        "flavor": "nvidia",
    },
    "huawei.com/Ascend910": {
        "gres": "npu",
        "visible_env": ["ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"],
        "node_selector": {"accelerator": "huawei-Ascend910"},
        "tolerations": [{"key": "huawei.com/Ascend910", "operator": "Exists", "effect": "NoSchedule"}],
        "dist_backend": "hccl",
        "flavor": "ascend910",
    },
}

Devices = Mapping[str, DeviceMap]


def merged_device_settings(section: object) -> dict[str, Any]:
    """The ``devices`` section over the defaults: a type's given keys replace the default ones,
    a new type starts empty, ``null`` removes a type. The type is the key (``type:`` may repeat it)."""
    if section is None:
        section = {}
    if not isinstance(section, Mapping):
        raise ValueError("must be a map of device type -> {gres, visible_env, node_selector, tolerations, ...}")
    out: dict[str, Any] = {kind: {**entry, "type": kind} for kind, entry in DEFAULT_DEVICE_SETTINGS.items()}
    for kind, entry in section.items():
        if entry is None:
            out.pop(kind, None)
            continue
        if not isinstance(entry, Mapping):
            out[kind] = entry  # refused by validation, naming the key
            continue
        if "type" in entry and entry["type"] != kind:
            raise ValueError(f"{kind}: type {entry['type']!r} differs from its key (leave type out)")
        out[kind] = {**(out.get(kind) or {}), **entry, "type": kind}
    return out


def default_devices() -> dict[str, DeviceMap]:
    return {kind: DeviceMap.model_validate(entry) for kind, entry in merged_device_settings({}).items()}


DEVICES: Devices = default_devices()


def visible_env_names(devices: Devices) -> list[str]:
    """Every visible-device variable of the table, in type order (each listed once)."""
    names: list[str] = []
    for _, dev in sorted(devices.items()):
        names += [n for n in dev.visible_env if n not in names]
    return names


def placement(kind: str, devices: Devices) -> dict[str, Any]:
    """How a notebook asking for ``kind`` is placed on each backend (``ProfileOption.placement``).

    A type absent from the table gets no node selector, no tolerations, no variables and no GRES
    (the spawner then refuses it on Slurm)."""
    dev = devices.get(kind)
    if dev is None:
        return {
            "type": kind,
            "kubernetes": {"node_selector": {}, "tolerations": []},
            "slurm": {"gres": None},
            "local": {"visible_env": []},
        }
    return {
        "type": kind,
        "kubernetes": {"node_selector": dict(dev.node_selector), "tolerations": dev.toleration_manifests()},
        "slurm": {"gres": dev.gres or None},
        "local": {"visible_env": list(dev.visible_env)},
    }
