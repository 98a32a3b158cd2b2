"""Pydantic models of the REST API and of the settings file (``extra="forbid"`` everywhere)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from ..core.limits import MAX_ITEMS, MAX_SHORT, MAX_TEXT
from .quantities import RESOURCE_RE, check_resource_name, parse_amount, parse_bytes, parse_resources

NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")


def check_name(value: str) -> str:
    if not NAME_RE.match(value):
        raise ValueError(
            f"{value!r} is not a valid name: use 1-32 lowercase letters, digits and '-',"
            " starting and ending with a letter or digit"
        )
    return value


def _device(value: str) -> str:
    check_resource_name(value)
    if value in ("cpu", "memory"):
        raise ValueError(f"accelerator type must be a device like nvidia.com/gpu, not {value!r}")
    return value


Name = Annotated[
    str, AfterValidator(check_name), WithJsonSchema({"type": "string", "pattern": NAME_RE.pattern, "maxLength": 32})
]
Text = Annotated[str, Field(max_length=MAX_TEXT)]
Short = Annotated[str, Field(max_length=MAX_SHORT)]
#: amounts as numbers or as the quantities people type (``16Gi``, ``500m``): parsed here, once
Resources = Annotated[
    dict[str, float | int],
    BeforeValidator(parse_resources),
    WithJsonSchema(  # null is none (an empty key in the settings file): parse_resources
        {
            "anyOf": [
                {"type": "object", "additionalProperties": {"anyOf": [{"type": "number"}, {"type": "string"}]}},
                {"type": "null"},
            ]
        },
        mode="validation",
    ),
]
Cpu = Annotated[float, BeforeValidator(lambda v: parse_amount("cpu", v))]
Memory = Annotated[int, BeforeValidator(lambda v: parse_amount("memory", v))]
Arch = Literal["amd64", "arm64"] | None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Accelerator(Strict):
    type: Annotated[
        str,
        AfterValidator(_device),
        WithJsonSchema({"type": "string", "pattern": RESOURCE_RE.pattern, "not": {"enum": ["cpu", "memory"]}}),
    ]
    count: int = Field(ge=1, le=2**31 - 1)


class ProfileSpec(Strict):
    display_name: Text = ""
    description: Text = ""
    image: Short = ""
    kernel: Short = "python3"
    cpu: Cpu = 1.0
    memory: Memory = 2**31
    accelerator: Accelerator | None = None
    arch: Arch = None


class _Named(Strict):
    name: Name


class ProfileIn(ProfileSpec, _Named):
    pass


class ProfileOut(ProfileIn):
    pass


class ProfilePatch(Strict):
    display_name: Text | None = None
    description: Text | None = None
    image: Short | None = None
    kernel: Short | None = None
    cpu: Cpu | None = None
    memory: Memory | None = None
    accelerator: Accelerator | None = None
    arch: Arch = None


IdleTimeout = Annotated[
    int | None,
    Field(
        ge=1,
        le=366 * 86400,
        description="seconds idle before the platform stops this VC's notebook servers (ops/culler.py),"
        " read on every pass; null: only the hub's culling.timeout",
    ),
]


StorageQuota = Annotated[
    int | None,
    BeforeValidator(parse_bytes),
    WithJsonSchema(
        {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}, {"type": "null"}]}, mode="validation"
    ),
    Field(
        description="bytes the VC may keep in the dataset store (its datasets' and models' objects) and in"
        " its jobs' folders, as a number or a quantity (`500Gi`); a commit or upload past it is refused"
        ' (413) before its bytes are written; null: no limit (docs/vcs.md, "Storage")',
    ),
]


class VCSpec(Strict):
    description: Text = ""
    quota: Resources = Field(default_factory=dict)
    groups: list[Short] = Field(default_factory=list, max_length=MAX_ITEMS)
    profiles: list[Name] = Field(default_factory=list, max_length=MAX_ITEMS)
    user_caps: Resources = Field(default_factory=dict)
    idle_timeout: IdleTimeout = None
    storage_quota: StorageQuota = None


class VCIn(VCSpec, _Named):
    pass


class VCPatch(Strict):
    description: Text | None = None
    quota: Resources | None = None
    groups: list[Short] | None = Field(None, max_length=MAX_ITEMS)
    profiles: list[Name] | None = Field(None, max_length=MAX_ITEMS)
    user_caps: Resources | None = None
    idle_timeout: IdleTimeout = None  # null here clears it
    storage_quota: StorageQuota = None  # null here clears it


class StorageUse(Strict):
    """A VC's storage: what counts toward its ``storage_quota`` (vcs/storage.py)."""

    quota: int | None = Field(description="bytes; null: no limit")
    used: int = Field(description="bytes counted toward the quota: `store` + `job_outputs`")
    store: int = Field(description="bytes of the store's objects the VC holds (uploads, dataset and model versions)")
    job_outputs: int = Field(description="bytes of its jobs' folders, as the storage walk last measured them")
    measured: datetime | None = Field(description="when the walk last measured a folder of the VC; null: never")


class VCOut(VCIn):
    used: dict[str, float | int]
    free: dict[str, float | int] = Field(
        description="what could start: the quota left, each device capped by what the cluster has unused"
    )
    storage: StorageUse


class AllocationIn(Strict):
    user: str | None = Field(
        None, min_length=1, max_length=MAX_SHORT, description="whose allocation; default: the caller"
    )
    vc: Name
    profile: Name
    kind: Literal["server", "job"] = "server"
    ref: str = Field(min_length=1, max_length=255, description="server: 'user/servername'")


class DevicePlacement(Strict):
    """Where a server's accelerators are, when the platform placed them (local backend)."""

    node: str = Field(description="the machine, as node reports name it")
    type: str = Field(description="the device type, e.g. nvidia.com/gpu")
    visible: list[int] = Field(description="its device indices on that node (the visible-device variable's value)")


class AllocationOut(Strict):
    id: int
    user: str
    vc: str
    profile: str
    kind: str
    ref: str
    resources: dict[str, float | int]
    devices: DevicePlacement | None = Field(
        None, description="the device indices a server got (local backend); null where the engine picks them"
    )
    created: datetime


class Me(Strict):
    name: str
    kind: Literal["user", "service"]
    admin: bool
    groups: list[str]
    vcs: list[str]


class KubePlacement(Strict):
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]


class SlurmPlacement(Strict):
    gres: str | None = Field(description="GRES name (--gres=<gres>:<count>); null: this type has none")


class LocalPlacement(Strict):
    visible_env: list[str] = Field(description="variables that list the visible devices, numbered 0..count-1")


class Placement(Strict):
    """Where a server with this accelerator goes on each backend: the settings' ``devices`` table."""

    type: str
    kubernetes: KubePlacement
    slurm: SlurmPlacement
    local: LocalPlacement


class ProfileOption(ProfileOut):
    available: bool
    reason: str | None = None
    size: str = Field(description='what one server takes, for people: "0.5 cpu, 1Gi memory, 1 nvidia.com/gpu"')
    placement: Placement | None = Field(None, description="the accelerator's placement; null without accelerator")


class VCOption(Strict):
    name: str
    description: str
    quota: dict[str, float | int]
    used: dict[str, float | int]
    free: dict[str, float | int]
    free_now: dict[str, float | int] = Field(
        description="what could start this moment: `free`, with devices capped by what the cluster has unused"
    )
    free_now_text: str = Field(description='`free_now` for people: "3.5 cpu, 7Gi memory, 0 nvidia.com/gpu"')
    quota_text: str = Field(description="`quota` for people, in the same style")
    profiles: list[ProfileOption]


class ServerCgroup(Strict):
    """Where a notebook server's cgroup goes (core/cgroups.py) and its process limit."""

    parent: str = Field(description="the platform instance's parent cgroup, yitong-<hash of the data directory>")
    max_processes: int = Field(description="tasks (processes and threads) the server may have at once")


class SystemAccount(Strict):
    """The system account a person's notebooks and jobs run as (multi-user mode, docs/security.md)."""

    name: str
    uid: int
    gid: int
    home: str
    pid_namespace: bool = Field(
        False, description="the server runs in a PID namespace of its own (backends.local.pid_namespaces)"
    )
    cgroup: ServerCgroup | None = Field(
        None, description="the server's cgroup (backends.local.cgroups): null where limits are off or unusable"
    )


class SpawnOptions(Strict):
    user: str
    vcs: list[VCOption]
    account: SystemAccount | None = Field(
        None, description="multi-user mode: the account the server runs as (created on first use); null: single-person"
    )
    visible_env: list[str] = Field(
        default_factory=list,
        description="every visible-device variable of the accelerator table: local servers get those their"
        " profile's placement does not list set empty",
    )


class VCUsage(Strict):
    name: str
    quota: dict[str, float | int]
    used: dict[str, float | int]
    free: dict[str, float | int]
    allocations: int
    storage: StorageUse


class Usage(Strict):
    backend: str
    inventory: dict[str, float | int]
    used: dict[str, float | int]
    vcs: list[VCUsage]
