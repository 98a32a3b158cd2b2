"""The settings file (YAML): the sections the platform service reads.

``backend``, ``service``, ``database``, ``storage``, ``jobs``, ``devices``, ``ssh``, ``alerts``, ``ops``, ``culling``, ``reclaim``, ``models``, ``backends.*.inventory``,
``profiles`` and ``vcs``;
the hub's sections (``hub``, ``auth``, ``groups``: :data:`HUB_SECTIONS`) belong to
``jupyterhub_config.py``, which checks them. Any other key, at the top or inside a section, is
an error that names it: a typo (``database: {uri: ...}``) must not start the platform on a guess.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ..alerts.settings import AlertsSettings
from ..models.env_settings import ModelsSettings
from ..ops.schemas import CullingSettings, OpsSettings, ReclaimSettings
from ..ssh.schemas import SSHSettings
from ..vcs.devices import DeviceMap, DeviceType, default_devices, merged_device_settings
from ..vcs.profile_list import expand_profiles
from ..vcs.quantities import parse_amount
from ..vcs.schemas import ProfileSpec, Resources, VCSpec, check_name
from .limits import LimitsSettings, load_yaml

DEFAULT_SETTINGS = "yitong.example.yaml"
DEFAULT_DATA_DIR = ".yitong"

Bytes = Annotated[int, BeforeValidator(lambda v: parse_amount("memory", v))]


#: top-level sections the hub reads and checks (spawner/yitong_spawner/settings_schema.py)
HUB_SECTIONS = ("hub", "auth", "groups")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServiceSettings(Strict):
    ip: str = "127.0.0.1"
    port: int = 8010
    restart: bool = Field(
        True,
        description="the hub starts the service under a supervisor that starts it again 0.5 s after a crash"
        " (core/supervise.py); false: the hub runs it bare and notices a crash only on its 30 s poll",
    )
    reconcile_interval: float = Field(30.0, ge=0, description="seconds between reconciler runs (0: only at start)")
    limits: LimitsSettings = Field(default_factory=LimitsSettings, description="largest request bodies (413 above)")
    threads: int = Field(
        40,
        ge=1,
        le=1000,
        description="threads for blocking work (database, files); requests beyond them wait (docs/benchmarks.md, 'At load')",
    )
    hub_cache_seconds: float = Field(
        5.0,
        ge=0,
        le=300,
        description="seconds the hub's answer about a token or user is reused (a token revoked in the hub"
        " still works here for at most this long; 0: ask the hub on every request)",
    )
    idempotency_ttl: float = Field(
        86400.0, gt=0, description="seconds a create's answer is replayed to a retry with the same Idempotency-Key"
    )
    account_tag: str = Field(
        "",
        pattern=r"^[a-z0-9]{0,6}$",
        description="multi-user mode: the tag in this platform's system account names, yt<tag>-<name> (1-6 of"
        " a-z, 0-9), so two platforms on one host never share an account; empty: 4 hex digits of the data"
        " directory's real path. Pin it before moving the data directory (e.g. 'lab')",
    )


class DatabaseSettings(Strict):
    url: str | None = Field(None, description="SQLAlchemy URL (default: SQLite in the data directory)")


class StorageSettings(BaseModel):
    """The dataset store (``storage``): where objects live and the limits of uploads."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(None, description="fsspec URL; null = file://<data_dir>/store")
    options: dict[str, Any] = Field(default_factory=dict, description="passed to fsspec.filesystem")
    pack_threshold: Bytes = Field(2**20, description="files up to this size travel in packs")
    max_upload_bytes: Bytes = Field(100 * 2**30, description="largest pack body or Upload-Length (413 above)")
    cache_dir: Path | None = Field(None, description="null = <data_dir>/cache")
    materialize_dir: Path | None = Field(None, description="null = <data_dir>/materialized")
    gc_grace: float = Field(
        3600.0, ge=0, description="seconds before unreferenced new objects, temp and partial files may be collected"
    )
    usage_interval: float = Field(
        600.0,
        ge=0,
        description="seconds between walks that measure homes and job folders (job folders count toward their"
        " VC's storage_quota; ops/storage_walk.py); 0: no walk",
    )


class JobsSettings(BaseModel):
    """Jobs (``jobs``): how the service reaches its jobs and how often it looks at them."""

    model_config = ConfigDict(extra="forbid")

    api_url: str | None = Field(
        None,
        description="the API base URL jobs POST metrics to (YITONG_API_URL); null = http://<service ip>:<port><prefix>api/v1",
    )
    poll_interval: float = Field(1.0, gt=0, le=60, description="seconds between admission passes and job polls")
    enabled: bool = Field(True, description="run the job manager in this service (one service per database)")
    token_lifetime: int = Field(
        86400, ge=60, description="seconds a job's own hub token lives when its spec has no max_run_time"
    )
    token_grace: int = Field(
        3600, ge=0, description="seconds a job's token outlives its max_run_time (time queued in the engine)"
    )
    token_spare_age: float = Field(
        30.0,
        ge=0,
        le=300,
        description="when an owner's attempts come in a burst, their hub tokens are minted ahead and wait at most"
        " this many seconds for an attempt before they are revoked (0: every attempt mints its own at launch)",
    )


class BackendSettings(BaseModel):
    """``backends.<name>``: the inventory, plus the backend's own keys (kept as extras; each backend
    validates its section, e.g. ``runner_slurm.SlurmSettings``)."""

    model_config = ConfigDict(extra="allow")

    inventory: Resources = Field(default_factory=dict)


DevicesSection = Annotated[dict[DeviceType, DeviceMap], BeforeValidator(merged_device_settings)]


class Settings(Strict):
    backend: Literal["local", "kubernetes", "slurm"] = "local"
    hub: Any = Field(None, description="the hub's section (checked by the hub)")
    auth: Any = Field(None, description="the hub's section (checked by the hub)")
    groups: Any = Field(None, description="the hub's section (checked by the hub)")
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    ssh: SSHSettings = Field(default_factory=SSHSettings)
    ops: OpsSettings = Field(default_factory=OpsSettings)
    culling: CullingSettings = Field(default_factory=CullingSettings)
    reclaim: ReclaimSettings = Field(default_factory=ReclaimSettings)
    alerts: AlertsSettings = Field(
        default_factory=AlertsSettings, description="monitoring and alerts (docs/operations.md)"
    )
    models: ModelsSettings = Field(
        default_factory=ModelsSettings, description="MLServer's environment for endpoints (docs/models.md)"
    )
    backends: dict[str, BackendSettings] = Field(default_factory=dict)
    devices: DevicesSection = Field(
        default_factory=default_devices, description="the accelerator table (vcs/devices.py), merged over the defaults"
    )
    profiles: dict[str, ProfileSpec] = Field(default_factory=dict)
    vcs: dict[str, VCSpec] = Field(default_factory=dict)
    data_dir: Path = Path(DEFAULT_DATA_DIR)

    @model_validator(mode="before")
    @classmethod
    def _z2jh_profiles(cls, data: Any) -> Any:
        """``profiles`` may be a z2jh ``profileList`` (vcs/profile_list.py): expanded into Yitong profiles,
        and a VC naming an entry's slug (or named by the entry's ``vcs``) offers all of them."""
        if not isinstance(data, dict) or "profiles" not in data:
            return data
        profiles, groups, offered = expand_profiles(data["profiles"])
        vcs = data.get("vcs")
        if isinstance(vcs, dict):
            vcs = {k: dict(v) if isinstance(v, dict) else v for k, v in vcs.items()}
            for name, vc in vcs.items():
                if not isinstance(vc, dict):
                    continue
                named = [n for p in vc.get("profiles") or [] for n in groups.get(p, [p])]
                named += [n for n in offered.pop(name, []) if n not in named]
                vc["profiles"] = list(dict.fromkeys(named))
            data = {**data, "vcs": vcs}
        if offered:
            raise ValueError(f"profiles: an entry names VC {sorted(offered)[0]}, which is not in vcs")
        return {**data, "profiles": profiles}

    @model_validator(mode="after")
    def _names(self) -> Settings:
        for name in [*self.profiles, *self.vcs]:
            check_name(name)
        for vc_name, vc in self.vcs.items():
            missing = [p for p in vc.profiles if p not in self.profiles]
            if missing:
                raise ValueError(f"VC {vc_name} offers unknown profiles: {', '.join(missing)}")
        return self

    @property
    def database_url(self) -> str:
        return self.database.url or f"sqlite:///{self.data_dir / 'yitong.sqlite'}"

    @property
    def storage_url(self) -> str:
        return self.storage.url or f"file://{(self.data_dir / 'store').absolute()}"

    @property
    def cache_dir(self) -> Path:
        return (self.storage.cache_dir or self.data_dir / "cache").absolute()

    @property
    def materialize_dir(self) -> Path:
        return (self.storage.materialize_dir or self.data_dir / "materialized").absolute()

    def backend_inventory(self) -> Resources:
        section = self.backends.get(self.backend)
        return dict(section.inventory) if section else {}


class SettingsError(Exception):
    pass


def load_settings(path: str | os.PathLike | None = None, data_dir: str | os.PathLike | None = None) -> Settings:
    """Read the YAML file (``--settings`` / ``YITONG_SETTINGS``); a missing default file is empty."""
    explicit = path or os.environ.get("YITONG_SETTINGS")
    file = Path(explicit or DEFAULT_SETTINGS)
    raw: dict = {}
    if file.exists():
        try:
            raw = load_yaml(file.read_text()) or {}
        except yaml.YAMLError as e:
            raise SettingsError(f"{file}: {yaml_problem(e)}") from None
        if not isinstance(raw, dict):
            raise SettingsError(f"{file}: the settings file must be a YAML mapping")
    elif explicit:
        raise SettingsError(f"settings file {file} does not exist")
    raw["data_dir"] = data_dir or os.environ.get("YITONG_DATA_DIR") or DEFAULT_DATA_DIR
    try:
        return Settings.model_validate(raw)
    except ValidationError as e:
        raise SettingsError(f"{file}: {describe(e)}") from e


def yaml_problem(error: yaml.YAMLError) -> str:
    """``not valid YAML at line 3, column 5: <what>`` (pure)."""
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(error, "problem", None) or "cannot be parsed"
    return f"not valid YAML{where}: {problem}"


def describe(error: ValidationError) -> str:
    """One readable line per problem: ``vcs.vision.quota: memory: '2Gx' is not a quantity``."""
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        msg = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            msg = "unknown key (a typo? docs/settings.md lists the keys)"
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts)
