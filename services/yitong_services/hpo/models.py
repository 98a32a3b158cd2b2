"""Tables of the HPO capability: experiments and their trials (each trial is one job)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ..core.models import Base, UTCDateTime, utcnow


class Experiment(Base):
    """One search: its space, tuner, assessor, objective, budget and the trial job template."""

    __tablename__ = "experiments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32))
    vc: Mapped[str] = mapped_column(ForeignKey("vcs.name"), index=True)
    user: Mapped[str] = mapped_column(String(255), index=True)
    groups: Mapped[list[str]] = mapped_column(default=list)  # the owner's hub groups when created
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)  # schemas.ExperimentSpec, as JSON
    state: Mapped[str] = mapped_column(String(16), index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # seconds the experiment ran before its current run (stop/resume keeps the duration budget)
    used_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    resumed: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Trial(Base):
    """One trial: the parameters the tuner chose, the job that runs them, what it reported."""

    __tablename__ = "trials"
    __table_args__ = (UniqueConstraint("experiment_id", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id"), nullable=True, index=True)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)  # what the trial code gets (NNI's shape)
    internal: Mapped[dict[str, Any]] = mapped_column(default=dict)  # Optuna's params and distributions
    state: Mapped[str] = mapped_column(String(16), index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    intermediate: Mapped[list[Any]] = mapped_column(JSON, default=list)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    offset: Mapped[int] = mapped_column(Integer, default=0)  # bytes of the metrics file already read
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
