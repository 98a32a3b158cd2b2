"""Tables of the model capability: models, versions and aliases.

A model ``<vc>/<name>`` keeps its files in a backing dataset ``<vc>/model-<name>`` (the same
content-addressed store, uploads, verify and GC as every dataset); a model version is one
version of that dataset plus what a registry says about it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ..core.models import Base, UTCDateTime, utcnow


class Model(Base):
    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("vc", "name", name="uq_models_vc_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vc: Mapped[str] = mapped_column(ForeignKey("vcs.name"), index=True)
    name: Mapped[str] = mapped_column(String(32))
    description: Mapped[str] = mapped_column(Text, default="")
    owner: Mapped[str] = mapped_column(String(255))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ModelVersion(Base):
    """``number`` is the backing dataset version's number (one fact, not two counters)."""

    __tablename__ = "model_versions"
    __table_args__ = (UniqueConstraint("model_id", "number", name="uq_model_versions_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    dataset_version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id"), unique=True)
    author: Mapped[str] = mapped_column(String(255))
    framework: Mapped[str] = mapped_column(String(64), default="")
    format: Mapped[str] = mapped_column(String(64), default="")
    signature: Mapped[dict[str, Any]] = mapped_column(default=dict)
    metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)
    tags: Mapped[dict[str, Any]] = mapped_column(default=dict)
    lineage: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ModelAlias(Base):
    """A movable name (``production``) for one version of a model."""

    __tablename__ = "model_aliases"
    __table_args__ = (UniqueConstraint("model_id", "name", name="uq_model_aliases_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    version_id: Mapped[int] = mapped_column(ForeignKey("model_versions.id", ondelete="CASCADE"), index=True)


class Endpoint(Base):
    """A deployed model: ``replicas`` are MLServer processes, each a job of the VC's queue (so it
    holds a job allocation under the VC's quota while it runs), each serving one version with a
    share (``weight``) of the endpoint's traffic (models/rollout.py); ``scale`` replicas of each
    version with a share. ``version_id`` is the version
    with the largest share. ``allocation_id``/``pid``/``port``: endpoints made before replicas."""

    __tablename__ = "endpoints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    vc: Mapped[str] = mapped_column(ForeignKey("vcs.name"), index=True)
    owner: Mapped[str] = mapped_column(String(255))
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("model_versions.id"), index=True)
    allocation_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    port: Mapped[int] = mapped_column(Integer, default=0)
    pid: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default="starting")
    reason: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # [{job, version_id, number, port, dir, weight, routed, draining}] (models/rollout.py)
    replicas: Mapped[list[dict[str, Any]]] = mapped_column(default=list)
    # replicas of every version with a share (1..rollout.MAX_REPLICAS)
    scale: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    # on Kubernetes: {kind: kserve, namespace, name, latest, previous, canary, profile, url} (models/endpoints_kube.py)
    engine: Mapped[dict[str, Any]] = mapped_column(default=dict)


class BatchJob(Base):
    """A batch inference job (job ``job_id``): the model version it runs over the input dataset
    version, and the dataset its predictions become a version of (``output_version`` once the
    job committed them). Written by the platform at submit, so the lineage it gives the output
    version is the platform's, not the job's word."""

    __tablename__ = "batch_jobs"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("model_versions.id", ondelete="CASCADE"), index=True)
    input: Mapped[dict[str, Any]] = mapped_column(default=dict)  # {dataset, version, manifest, path}
    output_dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    plan: Mapped[dict[str, Any]] = mapped_column(default=dict)  # {columns, keep, chunk_rows}
    output_version: Mapped[int | None] = mapped_column(Integer, nullable=True)


class EndpointKey(Base):
    """A key an admin issued for outside callers of one endpoint (people who are not of its VC).
    Only its SHA-256 ``digest`` is kept (the key is shown once); ``prefix`` is its first
    characters, to tell keys apart. A revoked key stays listed, with ``revoked`` set."""

    __tablename__ = "endpoint_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    endpoint_id: Mapped[int] = mapped_column(ForeignKey("endpoints.id", ondelete="CASCADE"), index=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    note: Mapped[str] = mapped_column(String(255), default="")
    created_by: Mapped[str] = mapped_column(String(255))
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True, default=None)
