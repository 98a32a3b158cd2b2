"""Pydantic models of the model registry API (``extra="forbid"``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, model_validator

from ..core.limits import MAX_ID, MAX_ITEMS, MAX_MESSAGE, MAX_SHORT, MAX_TEXT
from ..datasets.schemas import FileEntry, TagName
from ..vcs.schemas import Cpu, Memory, Name, Strict
from .rollout import MAX_REPLICAS

Short = Annotated[str, Field(max_length=64)]
Key = Annotated[str, Field(min_length=1, max_length=128)]
DATATYPES = (
    "BOOL",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "FP16",
    "FP32",
    "FP64",
    "BYTES",
)
Datatype = Annotated[
    str, Field(pattern="^(" + "|".join(DATATYPES) + ")$", description="an Open Inference Protocol datatype")
]


class TensorSpec(Strict):
    """One input or output of a model, in Open Inference Protocol terms (-1: any size)."""

    name: Key
    datatype: Datatype
    shape: list[Annotated[int, Field(ge=-1, le=MAX_ID)]] = Field(default_factory=list, max_length=16)


class Signature(Strict):
    inputs: list[TensorSpec] = Field(default_factory=list, max_length=MAX_ITEMS)
    outputs: list[TensorSpec] = Field(default_factory=list, max_length=MAX_ITEMS)


class ModelIn(Strict):
    vc: Name
    name: Annotated[Name, Field(max_length=26)]
    description: str = Field("", max_length=MAX_TEXT)


class ModelPatch(Strict):
    description: str | None = Field(None, max_length=MAX_TEXT)


class ModelOut(Strict):
    vc: str
    name: str
    full_name: str
    description: str
    owner: str
    created: datetime
    dataset: str
    versions: int
    latest: int | None
    aliases: dict[str, int]


class ModelVersionIn(Strict):
    """A new version from files already uploaded (``files``, as a dataset commit takes them) or
    from a finished job's outputs (``job`` and ``path`` under its outputs directory)."""

    files: list[FileEntry] | None = None
    job: int | None = Field(None, ge=1, le=MAX_ID)
    path: str = Field("", max_length=MAX_SHORT, description="a file or folder under the job's outputs; '' = all")
    message: str = Field("", max_length=MAX_MESSAGE)
    framework: Short = ""
    format: Short = ""
    signature: Signature = Field(default_factory=Signature)
    metrics: dict[Key, Annotated[float, Field(allow_inf_nan=False)]] = Field(default_factory=dict, max_length=MAX_ITEMS)
    tags: dict[Key, Annotated[str, Field(max_length=MAX_SHORT)]] = Field(default_factory=dict, max_length=MAX_ITEMS)
    lineage: dict[Key, Any] = Field(
        default_factory=dict,
        max_length=16,
        description="more lineage (e.g. the notebook); a job's comes from its ledger",
    )

    @model_validator(mode="after")
    def _one_source(self) -> ModelVersionIn:
        if (self.files is None) == (self.job is None):
            raise ValueError("give either files or job, not both or neither")
        if self.files is not None and self.path:
            raise ValueError("path goes with job")
        return self


class ModelVersionOut(Strict):
    model: str
    number: int
    author: str
    created: datetime
    manifest: str
    files: int
    bytes: int
    message: str
    framework: str
    format: str
    signature: dict[str, Any]
    metrics: dict[str, Any]
    tags: dict[str, Any]
    lineage: dict[str, Any]
    aliases: list[str]


class ModelAliasIn(Strict):
    version: int = Field(ge=1, le=MAX_ID)


AliasName = TagName


class ModelComparison(Strict):
    """Versions' metrics side by side: ``metrics`` names every metric any of them has."""

    model: str
    metrics: list[str]
    versions: list[dict[str, Any]]


REPLICAS = (
    f"replicas of the version (1..{MAX_REPLICAS}), each a job holding the profile's resources under the VC's quota"
)


class EndpointIn(Strict):
    name: Name
    model: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{0,31}/[a-z0-9][a-z0-9-]{0,31}(@[A-Za-z0-9._-]{1,64})?$",
        description="vc/name[@ref]: a model version of a VC of yours",
    )
    profile: Name = Field(description="the resources the endpoint holds in the VC, as a profile the VC offers")
    replicas: int = Field(1, ge=1, le=MAX_REPLICAS, description=REPLICAS)


class EndpointDeployIn(Strict):
    """Roll an endpoint to another version of its model, or give that version a canary share."""

    model: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{0,31}/[a-z0-9][a-z0-9-]{0,31}(@[A-Za-z0-9._-]{1,64})?$",
        description="vc/name[@ref]: the version to deploy (of the endpoint's model)",
    )
    traffic: dict[Annotated[str, Field(pattern=r"^v[0-9]{1,9}$")], Annotated[int, Field(ge=1, le=100)]] | None = Field(
        None,
        max_length=1,
        description='the deployed version\'s share in percent, e.g. {"v2": 10} (a canary); none: 100 (a full roll)',
    )
    profile: Name | None = Field(None, description="the new replicas' profile (default: the current one's)")
    replicas: int | None = Field(None, ge=1, le=MAX_REPLICAS, description=REPLICAS + " (default: the current count)")


class EndpointScaleIn(Strict):
    """Run another number of replicas of every version with a share."""

    replicas: int = Field(ge=1, le=MAX_REPLICAS, description=REPLICAS)


class ReplicaOut(Strict):
    version: int
    job: int = Field(description="the job that runs this replica (its log is the server's)")
    job_state: str
    job_reason: str = Field("", description="the job's reason: why it is queued (the quota and VC), or how it ended")
    weight: int = Field(description="its version's share of the endpoint's traffic in percent")
    routed: bool = Field(description="the route sends it requests")
    draining: bool = Field(description="left the route; stops once its requests in flight are answered")


class EndpointOut(Strict):
    name: str
    vc: str
    owner: str
    model: str
    version: int
    state: str = Field(description="queued, starting, ready or failed")
    reason: str
    created: datetime
    url: str
    traffic: dict[str, int] = Field(description='target shares by version, e.g. {"v1": 90, "v2": 10}')
    scale: int = Field(1, description="replicas of every version with a share")
    replicas: list[ReplicaOut]


class EndpointKeyIn(Strict):
    note: str = Field("", max_length=MAX_SHORT, description="who the key is for (shown in the list)")


class EndpointKeyOut(Strict):
    id: int
    endpoint: str
    prefix: str = Field(description="the key's first characters, to tell keys apart")
    note: str
    created_by: str
    created: datetime
    revoked: datetime | None = Field(description="when it was revoked (null: in use)")


class EndpointKeyNew(EndpointKeyOut):
    key: str = Field(description="the key itself: shown this once (only its hash is kept)")


Column = Annotated[str, Field(min_length=1, max_length=MAX_SHORT)]
MAX_COLUMNS = 4096
MAX_CHUNK_ROWS = 10_000_000


class BatchIn(Strict):
    """Run a model version over a dataset version's CSV and Parquet files; the predictions become a new
    version of ``output`` (docs/models.md "Batch inference")."""

    input: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{0,31}/[a-z0-9][a-z0-9-]{0,31}(@[A-Za-z0-9][A-Za-z0-9._-]{0,63})?$",
        description="vc/name[@ref]: the dataset version to predict on (default ref: latest)",
    )
    output: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{0,31}/[a-z0-9][a-z0-9-]{0,31}$",
        description="vc/name: a dataset of the model's VC (created when missing) the predictions become a version of",
    )
    path: str = Field(
        "", max_length=MAX_SHORT, description="a CSV or Parquet file or folder in the input version; '' = all"
    )
    columns: list[Column] = Field(
        default_factory=list,
        max_length=MAX_COLUMNS,
        description="feature columns, in the model's order; [] = all but keep",
    )
    keep: list[Column] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="columns copied beside each prediction (an id)"
    )
    chunk_rows: int = Field(100_000, ge=1, le=MAX_CHUNK_ROWS, description="rows per chunk (the unit of resume)")
    cpu: Cpu = 1.0
    memory: Memory = 2 * 2**30
    retries: int = Field(
        2, ge=0, le=10, description="attempts after a failure; each resumes at the first missing chunk"
    )
    name: Name | None = Field(None, description="the job's name (default batch-<model>)")


class BatchOut(Strict):
    job: int
    state: str
    reason: str
    attempts: int
    model: str
    input: str
    output: str
    columns: list[str]
    keep: list[str]
    chunk_rows: int
    progress: dict[str, Any]
    version: int | None = Field(description="the output dataset's version with the predictions, once committed")


class BatchCommitIn(Strict):
    """The running batch job's predictions (manifest entries whose objects it uploaded)."""

    files: list[FileEntry] = Field(max_length=1_000_000)
