"""Tables of the job capability: jobs and runs (ledger records)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from ..core.models import Base, UTCDateTime, utcnow


class Job(Base):
    """A submitted job (docs/architecture.md "Jobs"); ``backend_ref`` is saved, never recomputed."""

    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32))
    vc: Mapped[str] = mapped_column(ForeignKey("vcs.name"), index=True)
    user: Mapped[str] = mapped_column(String(255), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    code: Mapped[dict[str, Any]] = mapped_column(default=dict)
    inputs: Mapped[list[dict[str, Any]]] = mapped_column(
        default=list
    )  # resolved: [{dataset, mount, version, manifest, version_id}]
    state: Mapped[str] = mapped_column(String(16), index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    priority: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    admitted: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    started: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    backend: Mapped[str] = mapped_column(String(32))
    backend_ref: Mapped[str | None] = mapped_column(Text, nullable=True)
    hosts: Mapped[list[str]] = mapped_column(default=list)
    ports: Mapped[dict[str, Any]] = mapped_column(default=dict)
    devices: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # what admission needs, computed once at submit: {"resources": {...}, "accelerator": {type, count} | None}
    request: Mapped[dict[str, Any]] = mapped_column(default=dict)
    token_hash: Mapped[str] = mapped_column(String(64), default="")
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)


class Run(Base):
    """One attempt of a job: its ledger record (inputs, code, environment, devices, metrics, artifacts)."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    record: Mapped[dict[str, Any]] = mapped_column(default=dict)
    metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
