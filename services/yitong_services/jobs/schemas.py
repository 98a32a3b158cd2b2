"""Pydantic models of the job API's answers: jobs, runs (the ledger record), metrics.

The requests are parsed by ``spec.py`` (a spec in JSON or YAML, or another system's document);
these models say what comes back, so that OpenAPI (and the clients' generated types) have them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema
from typing_extensions import TypedDict

from ..vcs.schemas import Strict

JobState = Literal["queued", "admitted", "running", "succeeded", "failed", "cancelled", "preempted"]


def _iso(value: datetime) -> str:
    return value.isoformat()


# written as ``datetime.isoformat()`` (``+00:00``), as the routes answered before they were typed
Timestamp = Annotated[
    datetime,
    PlainSerializer(_iso, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


class JobInput(Strict):
    """A dataset a job reads: the name as given, where it is mounted, the pinned version."""

    dataset: str
    mount: str
    version: int
    manifest: str


class JobDevices(TypedDict, total=False):
    """The accelerators an admitted job holds (``{}`` when none): type, count, visible indices.
    A TypedDict, not a model: the answer carries only the keys that are there."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    type: str
    count: int
    visible: list[int]


class JobOut(Strict):
    """A job (``GET /jobs``, ``POST /jobs/{id}/retry``)."""

    id: int
    name: str
    vc: str
    user: str
    state: JobState
    reason: str | None
    priority: int
    position: int | None
    spec: dict[str, Any]
    code: dict[str, Any]
    inputs: list[JobInput]
    created: Timestamp
    admitted: Timestamp | None
    started: Timestamp | None
    finished: Timestamp | None
    exit_code: int | None
    attempts: int
    backend: str
    backend_ref: str | None
    hosts: list[str]
    ports: dict[str, Any]
    devices: JobDevices
    runs: list[int]


class JobSubmitted(JobOut):
    """A job just submitted (``POST /jobs``, clone, rerun); ``notes`` lists unmapped fields of an imported document."""

    notes: list[str]


class JobPreview(BaseModel):
    """A dry run (``POST /jobs/preview``): the spec the document became, every note, what it holds; nothing queued."""

    spec: dict[str, Any] = Field(description="the Yitong job spec (docs/jobs-spec.md) the document became")
    notes: list[str] = Field(description="fields with no counterpart, changes made on the way, warnings")
    resources: dict[str, float | int] = Field(description="what the whole job holds against the VC's quota")
    refused: str | None = Field(
        None,
        description="why a submit of this spec would be refused here (e.g. 'this cluster has no nvidia.com/gpu'); "
        "null when it would be queued",
    )


class JobDetail(JobOut):
    """One job (``GET /jobs/{id}``, ``POST /jobs/{id}/cancel``): how to reach it, its ranks, its outputs directory."""

    access: str | None
    outputs_path: str
    ranks: list[int]


class Artifact(BaseModel):
    """A file under the run's outputs directory."""

    model_config = ConfigDict(extra="allow")

    path: str
    size: int
    blake3: str


class RunOut(BaseModel):
    """The ledger record of one attempt (``GET /runs/{id}``); stored records keep any further keys."""

    model_config = ConfigDict(extra="allow")

    run: int
    job: int
    name: str
    vc: str
    user: str
    attempt: int
    backend: str
    spec: dict[str, Any]
    parameters: dict[str, Any]
    inputs: list[JobInput]
    code: dict[str, Any]
    environment: dict[str, Any]
    devices: dict[str, Any]
    started: str | None
    finished: str | None
    state: str
    exit_code: int | None
    metrics: dict[str, Any]
    artifacts: list[Artifact]


class RunMetrics(Strict):
    """The run's metrics after ``POST /jobs/{id}/metrics`` merged the job's."""

    run: int
    metrics: dict[str, Any]
