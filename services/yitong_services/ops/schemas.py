"""Settings and REST models of the operations package (``ops`` in the settings file)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..core.limits import MAX_ITEMS, MAX_SHORT
from ..vcs.quantities import check_resource_name, parse_amount
from ..vcs.schemas import Resources

Short = Annotated[str, Field(max_length=MAX_SHORT)]


def _usage(values: object) -> dict[str, float | int]:
    """Like ``Resources``, but devices in use may be fractional (NVML's utilisation: 2.4 busy GPUs)."""
    if not isinstance(values, dict):
        raise ValueError(f"expected a map of resource -> amount, got {values!r}")
    out: dict[str, float | int] = {}
    for name, amount in values.items():
        check_resource_name(name)
        if name in ("cpu", "memory") or not isinstance(amount, (int, float)) or isinstance(amount, bool):
            out[name] = parse_amount(name, amount)
        elif amount < 0 or amount != amount:
            raise ValueError(f"{name}: {amount!r} is not an amount")
        else:
            out[name] = float(amount)
    return out


Usage = Annotated[dict[str, float | int], BeforeValidator(_usage)]


class OpsSettings(BaseModel):
    """``ops``: the dashboard's health probes and sampling, and the log files' retention."""

    model_config = ConfigDict(extra="forbid")

    probes: dict[Short, Short] = Field(
        default_factory=dict,
        description="extra services of this node to watch, name -> URL answering 2xx/3xx when healthy"
        " (e.g. {node-exporter: 'http://127.0.0.1:9100/metrics'}); the hub, the proxy, the job manager"
        " and the SSH gateway are always watched",
    )
    probe_interval: float = Field(10.0, gt=0, le=3600, description="seconds between health probes and usage samples")
    probe_timeout: float = Field(2.0, gt=0, le=60, description="seconds a probe may take before it counts as down")
    node_stale: float = Field(
        120.0, gt=0, description="seconds after its last report that a reported node shows red as silent"
    )
    max_nodes: int = Field(5000, ge=1, le=100_000, description="reported nodes kept (the oldest report is dropped)")
    history: int = Field(360, ge=1, le=10_000, description="usage samples kept for the 'over time' charts")
    log_max_bytes: int = Field(
        10 * 2**20, ge=2**16, description="size at which a log file of the platform rotates (<data_dir>/logs)"
    )
    log_backups: int = Field(
        5, ge=0, le=100, description="rotated files kept per log (retention: max_bytes x (1 + backups))"
    )
    log_scan_bytes: int = Field(
        16 * 2**20, ge=2**16, description="most bytes one log search reads, newest first (bounded reads)"
    )


class CullingSettings(BaseModel):
    """``culling``: idle servers stopped by the ``jupyterhub-idle-culler`` hub service (``timeout``:
    the hub's config builds it, ``yitong_spawner.hubconfig.idle_cullers``) and, per VC, by the
    platform service (``vcs`` seeds each VC's ``idle_timeout``; ops/culler.py); the console shows the policy."""

    model_config = ConfigDict(extra="forbid")

    timeout: int = Field(0, ge=0, description="seconds idle before a server is stopped (0: no culling)")
    every: int | None = Field(
        None, ge=0, description="seconds between passes (default: a tenth of the shortest timeout, at least 30)"
    )
    max_age: int = Field(0, ge=0, description="seconds after which any server is stopped, idle or not (0: never)")
    vcs: dict[Short, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict,
        description="per-VC timeouts, e.g. {vision: 1800}, for the VC's servers: seeds each VC's idle_timeout"
        " on first start; afterwards the console's value wins",
    )


class ReclaimSettings(BaseModel):
    """``reclaim``: notebook servers holding an accelerator, idle, warned then stopped
    (docs/operations.md, "Idle reclaim"). Off by default."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="run the accelerator reclaim in this service")
    idle: float = Field(
        1800.0, gt=0, description="seconds without kernel, terminal or server activity before a warning"
    )
    grace: float = Field(
        600.0, ge=0, description="seconds from the warning to the stop, unless the server is used meanwhile"
    )
    interval: float = Field(60.0, gt=0, le=3600, description="seconds between passes")
    busy_threshold: float = Field(0.05, ge=0, le=1, description="accelerator utilisation above which it counts as used")
    require_measurement: bool = Field(
        True,
        description="only reclaim where the accelerator's use is measured (NVML); false: idle kernels and terminals suffice",
    )


class ServiceHealth(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Short
    ok: bool
    detail: Annotated[str, Field(max_length=1024)] = ""


class DeviceProcess(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pid: int = Field(ge=0)
    memory: int | None = Field(None, ge=0, description="bytes of device memory it holds (None: not told)")


class DeviceUse(BaseModel):
    """One accelerator's use as NVML read it on its node (ops/usage.py)."""

    model_config = ConfigDict(extra="forbid")

    type: Annotated[str, Field(max_length=MAX_SHORT)] = "nvidia.com/gpu"
    index: int = Field(ge=0, le=1023, description="its index on the node (as the visible-device variables number it)")
    uuid: Annotated[str, Field(max_length=128)] = ""
    utilization: float = Field(ge=0, le=1, description="the fraction of the last sample period it was busy")
    memory_used: int = Field(0, ge=0)
    memory_total: int = Field(0, ge=0)
    processes: list[DeviceProcess] = Field(default_factory=list, max_length=256)


class NodeReport(BaseModel):
    """What a node's agent reports (``POST /nodes/report``): capacity, reservations, use, services."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
    source: Annotated[str, Field(max_length=32)] = "agent"
    allocatable: Resources = Field(default_factory=dict)
    allocated: Resources = Field(default_factory=dict)
    used: Usage = Field(default_factory=dict)
    services: list[ServiceHealth] = Field(default_factory=list, max_length=MAX_ITEMS)
    devices: list[DeviceUse] | None = Field(
        None, max_length=1024, description="per-device use through NVML; null: not measured (devices_note says why)"
    )
    devices_note: Annotated[str, Field(max_length=1024)] = ""


class NodeOut(BaseModel):
    name: str
    source: str
    age: float | None
    allocatable: dict[str, float | int]
    allocated: dict[str, float | int]
    used: dict[str, float | int | None]
    heat: float
    shown: dict[str, dict[str, str]]
    services: list[ServiceHealth]
    anomalies: list[str]


class VCLoad(BaseModel):
    name: str
    quota: dict[str, float | int]
    used: dict[str, float | int]
    queued: int
    shown: dict[str, str]


class Dashboard(BaseModel):
    """``GET /dashboard``: the whole cluster at a glance (docs/operations.md)."""

    generated: str
    backend: str
    nodes: list[NodeOut]
    totals: dict[str, dict[str, float | int]]
    anomalies: int
    vcs: list[VCLoad]
    jobs: dict[str, int]
    queued: int
    history: list[dict]


class LogLine(BaseModel):
    source: str
    at: str | None
    level: str
    text: str


class LogPage(BaseModel):
    """``GET /logs``: matching lines, newest first; ``truncated`` when the scan stopped at its bound."""

    sources: dict[str, list[str]]
    lines: list[LogLine]
    scanned_bytes: int
    truncated: bool


class ReclaimWarning(BaseModel):
    ref: str = Field(description="user/server name")
    server: str = Field(description="the server's name ('' the default server)")
    vc: str
    devices: dict[str, float | int]
    reason: str
    measured: str = Field(description="what its accelerator's use was read as")
    warned_at: float = Field(description="when it was warned (seconds since the epoch)")
    stop_at: float = Field(description="when it is stopped unless used (seconds since the epoch)")


class ReclaimWarnings(BaseModel):
    """``GET /reclaim/warnings``: the caller's own servers warned by the accelerator reclaim."""

    warnings: list[ReclaimWarning]
