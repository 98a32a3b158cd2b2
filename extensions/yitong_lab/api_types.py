"""REST models of the platform service as TypedDicts (generated: do not edit).

Written by ``docs/generate.py`` from ``docs/reference/openapi.json``; ``tests/test_docs.py``
fails when this file is stale.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class Accelerator(TypedDict):
    count: int
    type: str


class AlertsStatus(TypedDict):
    accelerators: bool
    alertmanager: Component
    email: bool
    message: str | None
    node_exporter: Component
    prometheus: Component


class AllocationIn(TypedDict):
    kind: NotRequired[Literal["server", "job"]]
    profile: str
    ref: str
    user: NotRequired[str | None]
    vc: str


class AllocationOut(TypedDict):
    created: str
    devices: NotRequired[DevicePlacement | None]
    id: int
    kind: str
    profile: str
    ref: str
    resources: dict[str, float | int]
    user: str
    vc: str


class Artifact(TypedDict):
    "A file under the run's outputs directory."

    blake3: str
    path: str
    size: int


class BatchCommitIn(TypedDict):
    "The running batch job's predictions (manifest entries whose objects it uploaded)."

    files: list[FileEntry]


class BatchIn(TypedDict):
    "Run a model version over a dataset version's CSV and Parquet files; the predictions become a new"

    chunk_rows: NotRequired[int]
    columns: NotRequired[list[str]]
    cpu: NotRequired[float]
    input: str
    keep: NotRequired[list[str]]
    memory: NotRequired[int]
    name: NotRequired[str | None]
    output: str
    path: NotRequired[str]
    retries: NotRequired[int]


class BatchOut(TypedDict):
    attempts: int
    chunk_rows: int
    columns: list[str]
    input: str
    job: int
    keep: list[str]
    model: str
    output: str
    progress: dict[str, Any]
    reason: str
    state: str
    version: int | None


class Body_clone_services_yitong_api_v1_experiments__experiment_id__clone_post(TypedDict):
    patch: NotRequired[dict[str, Any]]


class Body_clone_services_yitong_api_v1_jobs__job_id__clone_post(TypedDict):
    patch: NotRequired[dict[str, Any]]


class Body_extend_services_yitong_api_v1_experiments__experiment_id__extend_post(TypedDict):
    trials: int


class Body_report_services_yitong_api_v1_experiments_trials__job_id__report_post(TypedDict):
    step: NotRequired[int | None]
    type: Literal["intermediate", "final"]
    value: float | dict[str, float]


class ChangedPath(TypedDict):
    old_size: int
    path: str
    size: int


class Code(TypedDict):
    "What the client knows of the submitted directory (``code`` in the submit body)."

    commit: NotRequired[str | None]
    dirty_hash: NotRequired[str | None]
    path: NotRequired[str | None]


class CommitIn(TypedDict):
    "The whole manifest (``files``), or the changes to the parent's (``base`` = the parent's"

    base: NotRequired[str | None]
    delete: NotRequired[list[str]]
    files: NotRequired[list[FileEntry] | None]
    manifest: NotRequired[str | None]
    message: NotRequired[str]
    parent: NotRequired[int | None]
    put: NotRequired[list[FileEntry]]


class Committed(TypedDict):
    author: str
    bytes: int
    created: str
    dataset: str
    files: int
    lineage: Lineage
    manifest: str
    message: str
    number: int
    parent: int | None
    tags: list[str]
    unchanged: NotRequired[bool]


class Component(TypedDict):
    detail: str
    installed: bool
    state: str
    url: str | None


class Dashboard(TypedDict):
    "``GET /dashboard``: the whole cluster at a glance (docs/operations.md)."

    anomalies: int
    backend: str
    generated: str
    history: list[dict[str, Any]]
    jobs: dict[str, int]
    nodes: list[NodeOut]
    queued: int
    totals: dict[str, dict[str, float | int]]
    vcs: list[VCLoad]


class DatasetIn(TypedDict):
    description: NotRequired[str]
    name: str
    vc: str
    visibility: NotRequired[Literal["private", "vc"]]


class DatasetOut(TypedDict):
    bytes: int
    created: str
    description: str
    full_name: str
    latest: int | None
    name: str
    owner: str
    tags: dict[str, int]
    vc: str
    versions: int
    visibility: str


class DatasetPatch(TypedDict):
    description: NotRequired[str | None]
    visibility: NotRequired[Literal["private", "vc"] | None]


class DevicePlacement(TypedDict):
    "Where a server's accelerators are, when the platform placed them (local backend)."

    node: str
    type: str
    visible: list[int]


class DeviceProcess(TypedDict):
    memory: NotRequired[int | None]
    pid: int


class DeviceUse(TypedDict):
    "One accelerator's use as NVML read it on its node (ops/usage.py)."

    index: int
    memory_total: NotRequired[int]
    memory_used: NotRequired[int]
    processes: NotRequired[list[DeviceProcess]]
    type: NotRequired[str]
    utilization: float
    uuid: NotRequired[str]


class Diff(TypedDict):
    added: list[SizedPath]
    changed: list[ChangedPath]
    removed: list[SizedPath]


class EndpointDeployIn(TypedDict):
    "Roll an endpoint to another version of its model, or give that version a canary share."

    model: str
    profile: NotRequired[str | None]
    replicas: NotRequired[int | None]
    traffic: NotRequired[dict[str, Any] | None]


class EndpointIn(TypedDict):
    model: str
    name: str
    profile: str
    replicas: NotRequired[int]


class EndpointKeyIn(TypedDict):
    note: NotRequired[str]


class EndpointKeyNew(TypedDict):
    created: str
    created_by: str
    endpoint: str
    id: int
    key: str
    note: str
    prefix: str
    revoked: str | None


class EndpointKeyOut(TypedDict):
    created: str
    created_by: str
    endpoint: str
    id: int
    note: str
    prefix: str
    revoked: str | None


class EndpointOut(TypedDict):
    created: str
    model: str
    name: str
    owner: str
    reason: str
    replicas: list[ReplicaOut]
    scale: NotRequired[int]
    state: str
    traffic: dict[str, int]
    url: str
    vc: str
    version: int


class EndpointScaleIn(TypedDict):
    "Run another number of replicas of every version with a share."

    replicas: int


class Environment(TypedDict):
    image: NotRequired[str | None]
    kernel: NotRequired[str | None]


class Error(TypedDict):
    detail: str


class EventOut(TypedDict):
    alertname: str
    annotations: dict[str, Any]
    ends_at: str | None
    id: int
    labels: dict[str, Any]
    received: str
    severity: str
    starts_at: str
    status: str
    vc: str | None


class FileEntry(TypedDict):
    "One manifest entry. A TypedDict, not a model: a 70,000-file commit validates in a tenth"

    hash: str
    path: str
    size: int


class GCResult(TypedDict):
    bytes: int
    manifests: NotRequired[int]
    objects: int
    packs: int
    temp_files: NotRequired[int]


class HTTPValidationError(TypedDict):
    detail: str


class Hashes(TypedDict):
    hashes: list[str]


class History(TypedDict):
    items: list[EventOut]
    limit: int
    offset: int
    total: int


class Input(TypedDict):
    dataset: str
    mount: NotRequired[str | None]


class JobDetail(TypedDict):
    "One job (``GET /jobs/{id}``, ``POST /jobs/{id}/cancel``): how to reach it, its ranks, its outputs directory."

    access: str | None
    admitted: str | None
    attempts: int
    backend: str
    backend_ref: str | None
    code: dict[str, Any]
    created: str
    devices: JobDevices
    exit_code: int | None
    finished: str | None
    hosts: list[str]
    id: int
    inputs: list[JobInput]
    name: str
    outputs_path: str
    ports: dict[str, Any]
    position: int | None
    priority: int
    ranks: list[int]
    reason: str | None
    runs: list[int]
    spec: dict[str, Any]
    started: str | None
    state: Literal["queued", "admitted", "running", "succeeded", "failed", "cancelled", "preempted"]
    user: str
    vc: str


class JobDevices(TypedDict):
    "The accelerators an admitted job holds (``{}`` when none): type, count, visible indices."

    count: NotRequired[int]
    type: NotRequired[str]
    visible: NotRequired[list[int]]


class JobInput(TypedDict):
    "A dataset a job reads: the name as given, where it is mounted, the pinned version."

    dataset: str
    manifest: str
    mount: str
    version: int


class JobOut(TypedDict):
    "A job (``GET /jobs``, ``POST /jobs/{id}/retry``)."

    admitted: str | None
    attempts: int
    backend: str
    backend_ref: str | None
    code: dict[str, Any]
    created: str
    devices: JobDevices
    exit_code: int | None
    finished: str | None
    hosts: list[str]
    id: int
    inputs: list[JobInput]
    name: str
    ports: dict[str, Any]
    position: int | None
    priority: int
    reason: str | None
    runs: list[int]
    spec: dict[str, Any]
    started: str | None
    state: Literal["queued", "admitted", "running", "succeeded", "failed", "cancelled", "preempted"]
    user: str
    vc: str


class JobPreview(TypedDict):
    "A dry run (``POST /jobs/preview``): the spec the document became, every note, what it holds; nothing queued."

    notes: list[str]
    refused: NotRequired[str | None]
    resources: dict[str, float | int]
    spec: dict[str, Any]


class JobSubmission(TypedDict):
    "The submit body in JSON (the OpenAPI document's schema): the spec, plus ``code``, plus for"

    accelerator: NotRequired[Accelerator | None]
    code: NotRequired[Code | None]
    command: list[str] | str
    cpu: NotRequired[float]
    env: NotRequired[dict[str, str]]
    environment: Environment
    framework: NotRequired[Framework]
    hub_token: NotRequired[bool]
    inputs: NotRequired[list[Input]]
    max_run_time: NotRequired[int | None]
    memory: NotRequired[int]
    name: str
    nodes: NotRequired[int]
    outputs: NotRequired[str]
    priority: NotRequired[int | str]
    procs_per_node: NotRequired[int | None]
    retries: NotRequired[int]
    user: NotRequired[str | None]
    vc: str


class JobSubmitted(TypedDict):
    "A job just submitted (``POST /jobs``, clone, rerun); ``notes`` lists unmapped fields of an imported document."

    admitted: str | None
    attempts: int
    backend: str
    backend_ref: str | None
    code: dict[str, Any]
    created: str
    devices: JobDevices
    exit_code: int | None
    finished: str | None
    hosts: list[str]
    id: int
    inputs: list[JobInput]
    name: str
    notes: list[str]
    ports: dict[str, Any]
    position: int | None
    priority: int
    reason: str | None
    runs: list[int]
    spec: dict[str, Any]
    started: str | None
    state: Literal["queued", "admitted", "running", "succeeded", "failed", "cancelled", "preempted"]
    user: str
    vc: str


class KubePlacement(TypedDict):
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]


class Lineage(TypedDict):
    "The parent version and, for a version a platform job made (batch inference), the job,"

    inputs: NotRequired[list[dict[str, Any]]]
    job: NotRequired[int | None]
    kind: NotRequired[str | None]
    model: NotRequired[str | None]
    model_manifest: NotRequired[str | None]
    parent: int | None


class LocalPlacement(TypedDict):
    visible_env: list[str]


class LogLine(TypedDict):
    at: str | None
    level: str
    source: str
    text: str


class LogPage(TypedDict):
    "``GET /logs``: matching lines, newest first; ``truncated`` when the scan stopped at its bound."

    lines: list[LogLine]
    scanned_bytes: int
    sources: dict[str, list[str]]
    truncated: bool


class Manifest(TypedDict):
    files: list[FileEntry]


class Materialized(TypedDict):
    path: str


class Me(TypedDict):
    admin: bool
    groups: list[str]
    kind: Literal["user", "service"]
    name: str
    vcs: list[str]


class Missing(TypedDict):
    missing: list[str]


class ModelAliasIn(TypedDict):
    version: int


class ModelComparison(TypedDict):
    "Versions' metrics side by side: ``metrics`` names every metric any of them has."

    metrics: list[str]
    model: str
    versions: list[dict[str, Any]]


class ModelIn(TypedDict):
    description: NotRequired[str]
    name: str
    vc: str


class ModelOut(TypedDict):
    aliases: dict[str, int]
    created: str
    dataset: str
    description: str
    full_name: str
    latest: int | None
    name: str
    owner: str
    vc: str
    versions: int


class ModelPatch(TypedDict):
    description: NotRequired[str | None]


class ModelVersionIn(TypedDict):
    "A new version from files already uploaded (``files``, as a dataset commit takes them) or"

    files: NotRequired[list[FileEntry] | None]
    format: NotRequired[str]
    framework: NotRequired[str]
    job: NotRequired[int | None]
    lineage: NotRequired[dict[str, Any]]
    message: NotRequired[str]
    metrics: NotRequired[dict[str, float]]
    path: NotRequired[str]
    signature: NotRequired[Signature]
    tags: NotRequired[dict[str, str]]


class ModelVersionOut(TypedDict):
    aliases: list[str]
    author: str
    bytes: int
    created: str
    files: int
    format: str
    framework: str
    lineage: dict[str, Any]
    manifest: str
    message: str
    metrics: dict[str, Any]
    model: str
    number: int
    signature: dict[str, Any]
    tags: dict[str, Any]


class NodeOut(TypedDict):
    age: float | None
    allocatable: dict[str, float | int]
    allocated: dict[str, float | int]
    anomalies: list[str]
    heat: float
    name: str
    services: list[ServiceHealth]
    shown: dict[str, dict[str, str]]
    source: str
    used: dict[str, float | int | None]


class NodeReport(TypedDict):
    "What a node's agent reports (``POST /nodes/report``): capacity, reservations, use, services."

    allocatable: NotRequired[dict[str, float | str] | None]
    allocated: NotRequired[dict[str, float | str] | None]
    devices: NotRequired[list[DeviceUse] | None]
    devices_note: NotRequired[str]
    name: str
    services: NotRequired[list[ServiceHealth]]
    source: NotRequired[str]
    used: NotRequired[dict[str, float | int]]


class PersonIn(TypedDict):
    groups: NotRequired[list[str]]
    name: str
    password: NotRequired[str | None]
    vcs: NotRequired[list[str]]


class PersonOut(TypedDict):
    created: bool
    groups: list[str]
    name: str
    password: NotRequired[str | None]
    vcs: list[str]


class Placement(TypedDict):
    "Where a server with this accelerator goes on each backend: the settings' ``devices`` table."

    kubernetes: KubePlacement
    local: LocalPlacement
    slurm: SlurmPlacement
    type: str


class ProfileIn(TypedDict):
    accelerator: NotRequired[Accelerator | None]
    arch: NotRequired[Literal["amd64", "arm64"] | None]
    cpu: NotRequired[float]
    description: NotRequired[str]
    display_name: NotRequired[str]
    image: NotRequired[str]
    kernel: NotRequired[str]
    memory: NotRequired[int]
    name: str


class ProfileOption(TypedDict):
    accelerator: NotRequired[Accelerator | None]
    arch: NotRequired[Literal["amd64", "arm64"] | None]
    available: bool
    cpu: NotRequired[float]
    description: NotRequired[str]
    display_name: NotRequired[str]
    image: NotRequired[str]
    kernel: NotRequired[str]
    memory: NotRequired[int]
    name: str
    placement: NotRequired[Placement | None]
    reason: NotRequired[str | None]
    size: str


class ProfileOut(TypedDict):
    accelerator: NotRequired[Accelerator | None]
    arch: NotRequired[Literal["amd64", "arm64"] | None]
    cpu: NotRequired[float]
    description: NotRequired[str]
    display_name: NotRequired[str]
    image: NotRequired[str]
    kernel: NotRequired[str]
    memory: NotRequired[int]
    name: str


class ProfilePatch(TypedDict):
    accelerator: NotRequired[Accelerator | None]
    arch: NotRequired[Literal["amd64", "arm64"] | None]
    cpu: NotRequired[float | None]
    description: NotRequired[str | None]
    display_name: NotRequired[str | None]
    image: NotRequired[str | None]
    kernel: NotRequired[str | None]
    memory: NotRequired[int | None]


class ReclaimWarning(TypedDict):
    devices: dict[str, float | int]
    measured: str
    reason: str
    ref: str
    server: str
    stop_at: float
    vc: str
    warned_at: float


class ReclaimWarnings(TypedDict):
    "``GET /reclaim/warnings``: the caller's own servers warned by the accelerator reclaim."

    warnings: list[ReclaimWarning]


class ReplicaOut(TypedDict):
    draining: bool
    job: int
    job_reason: NotRequired[str]
    job_state: str
    routed: bool
    version: int
    weight: int


class RouteIn(TypedDict):
    "Email addresses for a VC's alerts (``vc`` null: every alert), optionally only some severities."

    emails: list[str]
    severities: NotRequired[list[Literal["info", "warning", "critical"]]]
    vc: NotRequired[str | None]


class RouteOut(TypedDict):
    created: str
    emails: list[str]
    id: int
    severities: list[str]
    vc: str | None


class RuleIn(TypedDict):
    "A threshold rule: ``kind`` and ``threshold`` (the kind's default when left out), limited to a VC"

    description: NotRequired[str]
    expr: NotRequired[str]
    for_seconds: NotRequired[int]
    kind: str
    name: str
    severity: NotRequired[Literal["info", "warning", "critical"]]
    threshold: NotRequired[float | None]
    vc: NotRequired[str | None]


class RuleOut(TypedDict):
    created: str
    description: str
    expr: str
    for_seconds: int
    id: int
    kind: str
    name: str
    promql: str
    severity: str
    threshold: float | None
    updated: str
    vc: str | None


class RulePatch(TypedDict):
    description: NotRequired[str | None]
    expr: NotRequired[str | None]
    for_seconds: NotRequired[int | None]
    severity: NotRequired[Literal["info", "warning", "critical"] | None]
    threshold: NotRequired[float | None]


class RunMetrics(TypedDict):
    "The run's metrics after ``POST /jobs/{id}/metrics`` merged the job's."

    metrics: dict[str, Any]
    run: int


class RunOut(TypedDict):
    "The ledger record of one attempt (``GET /runs/{id}``); stored records keep any further keys."

    artifacts: list[Artifact]
    attempt: int
    backend: str
    code: dict[str, Any]
    devices: dict[str, Any]
    environment: dict[str, Any]
    exit_code: int | None
    finished: str | None
    inputs: list[JobInput]
    job: int
    metrics: dict[str, Any]
    name: str
    parameters: dict[str, Any]
    run: int
    spec: dict[str, Any]
    started: str | None
    state: str
    user: str
    vc: str


class SSHInfo(TypedDict):
    enabled: bool
    host: str
    host_key: NotRequired[str]
    login: str
    port: int


class SSHKeyIn(TypedDict):
    key: str


class SSHKeyOut(TypedDict):
    algorithm: str
    bits: int
    comment: str
    created: str
    fingerprint: str
    id: int


class ServerCgroup(TypedDict):
    "Where a notebook server's cgroup goes (core/cgroups.py) and its process limit."

    max_processes: int
    parent: str


class ServiceHealth(TypedDict):
    detail: NotRequired[str]
    name: str
    ok: bool


class Signature(TypedDict):
    inputs: NotRequired[list[TensorSpec]]
    outputs: NotRequired[list[TensorSpec]]


class SilenceIn(TypedDict):
    "Silence alerts whose labels equal all of ``matchers`` (e.g. vc=vision, or alertname=mem-high)"

    comment: str
    matchers: dict[str, str]
    seconds: NotRequired[int]


class SilenceOut(TypedDict):
    comment: str
    created_by: str
    ends_at: str
    id: str
    matchers: dict[str, str]
    starts_at: str
    state: str


class SizedPath(TypedDict):
    path: str
    size: int


class SlurmPlacement(TypedDict):
    gres: str | None


class SpawnOptions(TypedDict):
    account: NotRequired[SystemAccount | None]
    user: str
    vcs: list[VCOption]
    visible_env: NotRequired[list[str]]


class StorageUse(TypedDict):
    "A VC's storage: what counts toward its ``storage_quota`` (vcs/storage.py)."

    job_outputs: int
    measured: str | None
    quota: int | None
    store: int
    used: int


class Stored(TypedDict):
    bytes: int
    stored: int


class SystemAccount(TypedDict):
    "The system account a person's notebooks and jobs run as (multi-user mode, docs/security.md)."

    cgroup: NotRequired[ServerCgroup | None]
    gid: int
    home: str
    name: str
    pid_namespace: NotRequired[bool]
    uid: int


class TagIn(TypedDict):
    version: int


class TensorSpec(TypedDict):
    "One input or output of a model, in Open Inference Protocol terms (-1: any size)."

    datatype: str
    name: str
    shape: NotRequired[list[int]]


class UploadState(TypedDict):
    complete: bool
    offset: int


class Usage(TypedDict):
    backend: str
    inventory: dict[str, float | int]
    used: dict[str, float | int]
    vcs: list[VCUsage]


class VCIn(TypedDict):
    description: NotRequired[str]
    groups: NotRequired[list[str]]
    idle_timeout: NotRequired[int | None]
    name: str
    profiles: NotRequired[list[str]]
    quota: NotRequired[dict[str, float | str] | None]
    storage_quota: NotRequired[int | str | None]
    user_caps: NotRequired[dict[str, float | str] | None]


class VCLoad(TypedDict):
    name: str
    queued: int
    quota: dict[str, float | int]
    shown: dict[str, str]
    used: dict[str, float | int]


class VCOption(TypedDict):
    description: str
    free: dict[str, float | int]
    free_now: dict[str, float | int]
    free_now_text: str
    name: str
    profiles: list[ProfileOption]
    quota: dict[str, float | int]
    quota_text: str
    used: dict[str, float | int]


class VCOut(TypedDict):
    description: NotRequired[str]
    free: dict[str, float | int]
    groups: NotRequired[list[str]]
    idle_timeout: NotRequired[int | None]
    name: str
    profiles: NotRequired[list[str]]
    quota: NotRequired[dict[str, float | int]]
    storage: StorageUse
    storage_quota: NotRequired[int | None]
    used: dict[str, float | int]
    user_caps: NotRequired[dict[str, float | int]]


class VCPatch(TypedDict):
    description: NotRequired[str | None]
    groups: NotRequired[list[str] | None]
    idle_timeout: NotRequired[int | None]
    profiles: NotRequired[list[str] | None]
    quota: NotRequired[dict[str, float | str] | None]
    storage_quota: NotRequired[int | str | None]
    user_caps: NotRequired[dict[str, float | str] | None]


class VCUsage(TypedDict):
    allocations: int
    free: dict[str, float | int]
    name: str
    quota: dict[str, float | int]
    storage: StorageUse
    used: dict[str, float | int]


class VerifyResult(TypedDict):
    cache_corrupt: NotRequired[list[str]]
    checked: int
    corrupt: list[str]
    missing: list[str]


class VersionOut(TypedDict):
    author: str
    bytes: int
    created: str
    dataset: str
    files: int
    lineage: Lineage
    manifest: str
    message: str
    number: int
    parent: int | None
    tags: list[str]


Framework = Literal["pytorch", "tensorflow", "mpi", "mindspore", "plain"]


__all__ = [
    "Accelerator",
    "AlertsStatus",
    "AllocationIn",
    "AllocationOut",
    "Artifact",
    "BatchCommitIn",
    "BatchIn",
    "BatchOut",
    "Body_clone_services_yitong_api_v1_experiments__experiment_id__clone_post",
    "Body_clone_services_yitong_api_v1_jobs__job_id__clone_post",
    "Body_extend_services_yitong_api_v1_experiments__experiment_id__extend_post",
    "Body_report_services_yitong_api_v1_experiments_trials__job_id__report_post",
    "ChangedPath",
    "Code",
    "CommitIn",
    "Committed",
    "Component",
    "Dashboard",
    "DatasetIn",
    "DatasetOut",
    "DatasetPatch",
    "DevicePlacement",
    "DeviceProcess",
    "DeviceUse",
    "Diff",
    "EndpointDeployIn",
    "EndpointIn",
    "EndpointKeyIn",
    "EndpointKeyNew",
    "EndpointKeyOut",
    "EndpointOut",
    "EndpointScaleIn",
    "Environment",
    "Error",
    "EventOut",
    "FileEntry",
    "Framework",
    "GCResult",
    "HTTPValidationError",
    "Hashes",
    "History",
    "Input",
    "JobDetail",
    "JobDevices",
    "JobInput",
    "JobOut",
    "JobPreview",
    "JobSubmission",
    "JobSubmitted",
    "KubePlacement",
    "Lineage",
    "LocalPlacement",
    "LogLine",
    "LogPage",
    "Manifest",
    "Materialized",
    "Me",
    "Missing",
    "ModelAliasIn",
    "ModelComparison",
    "ModelIn",
    "ModelOut",
    "ModelPatch",
    "ModelVersionIn",
    "ModelVersionOut",
    "NodeOut",
    "NodeReport",
    "PersonIn",
    "PersonOut",
    "Placement",
    "ProfileIn",
    "ProfileOption",
    "ProfileOut",
    "ProfilePatch",
    "ReclaimWarning",
    "ReclaimWarnings",
    "ReplicaOut",
    "RouteIn",
    "RouteOut",
    "RuleIn",
    "RuleOut",
    "RulePatch",
    "RunMetrics",
    "RunOut",
    "SSHInfo",
    "SSHKeyIn",
    "SSHKeyOut",
    "ServerCgroup",
    "ServiceHealth",
    "Signature",
    "SilenceIn",
    "SilenceOut",
    "SizedPath",
    "SlurmPlacement",
    "SpawnOptions",
    "StorageUse",
    "Stored",
    "SystemAccount",
    "TagIn",
    "TensorSpec",
    "UploadState",
    "Usage",
    "VCIn",
    "VCLoad",
    "VCOption",
    "VCOut",
    "VCPatch",
    "VCUsage",
    "VerifyResult",
    "VersionOut",
]
