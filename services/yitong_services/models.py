"""SQLAlchemy 2 ORM: VC, Profile, Allocation (resources as JSON), SeedLog; datasets, the object index; jobs and runs."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on every database (SQLite returns naive ones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value, dialect):  # type: ignore[no-untyped-def]
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[str]: JSON}


class VC(Base):
    __tablename__ = "vcs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    quota: Mapped[dict[str, Any]] = mapped_column(default=dict)
    groups: Mapped[list[str]] = mapped_column(default=list)
    profiles: Mapped[list[str]] = mapped_column(default=list)
    user_caps: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Profile(Base):
    __tablename__ = "profiles"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    display_name: Mapped[str] = mapped_column(Text, default="")
    description: Mapped[str] = mapped_column(Text, default="")
    image: Mapped[str] = mapped_column(Text, default="")
    kernel: Mapped[str] = mapped_column(String(255), default="python3")
    cpu: Mapped[float] = mapped_column(Float, default=1.0)
    memory: Mapped[int] = mapped_column(BigInteger)
    accelerator: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    arch: Mapped[str | None] = mapped_column(String(16), nullable=True)


class Allocation(Base):
    __tablename__ = "allocations"
    __table_args__ = (UniqueConstraint("kind", "ref", name="uq_allocations_kind_ref"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user: Mapped[str] = mapped_column(String(255), index=True)
    vc: Mapped[str] = mapped_column(ForeignKey("vcs.name"), index=True)
    profile: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str] = mapped_column(String(255))
    resources: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SeedLog(Base):
    """Names seeded from the settings file once; an admin's later delete is not undone."""

    __tablename__ = "seed_log"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)


class Dataset(Base):
    """A named dataset ``<vc>/<name>``; ``next_number`` never goes back, so numbers are not reused."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("vc", "name", name="uq_datasets_vc_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vc: Mapped[str] = mapped_column(ForeignKey("vcs.name"), index=True)
    name: Mapped[str] = mapped_column(String(32))
    description: Mapped[str] = mapped_column(Text, default="")
    visibility: Mapped[str] = mapped_column(String(16), default="vc")
    owner: Mapped[str] = mapped_column(String(255))
    next_number: Mapped[int] = mapped_column(Integer, default=1)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DatasetVersion(Base):
    """An immutable version: the hash of its manifest in the store, and totals for listings."""

    __tablename__ = "dataset_versions"
    __table_args__ = (UniqueConstraint("dataset_id", "number", name="uq_dataset_versions_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    manifest: Mapped[str] = mapped_column(String(64), index=True)
    parent: Mapped[int | None] = mapped_column(Integer, nullable=True)
    author: Mapped[str] = mapped_column(String(255))
    message: Mapped[str] = mapped_column(Text, default="")
    files: Mapped[int] = mapped_column(Integer, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DatasetTag(Base):
    __tablename__ = "dataset_tags"
    __table_args__ = (UniqueConstraint("dataset_id", "name", name="uq_dataset_tags_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id", ondelete="CASCADE"), index=True)


class DatasetRef(Base):
    """Something that uses a version (``job 42``): the version may not be deleted meanwhile."""

    __tablename__ = "dataset_refs"
    __table_args__ = (UniqueConstraint("version_id", "kind", "ref", name="uq_dataset_refs"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str] = mapped_column(String(255))
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Pack(Base):
    __tablename__ = "packs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class StoredObject(Base):
    """The object index: a hash is stored loose (``pack`` null) or at ``offset`` in a pack."""

    __tablename__ = "objects"

    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    pack: Mapped[str | None] = mapped_column(ForeignKey("packs.id"), nullable=True, index=True)
    offset: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    uploader: Mapped[str | None] = mapped_column(String(255), nullable=True)  # who sent the bytes first


class ObjectDataset(Base):
    """Read grants through datasets: ``dataset_id`` named ``hash`` in a version (objaccess.py).

    Whoever sees the dataset may read the object; the grant goes with the dataset."""

    __tablename__ = "object_datasets"

    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True, index=True)


class ObjectUpload(Base):
    """Read grants through uploads: ``uploader`` sent the bytes of ``hash`` when the store had
    them already (the first uploader is ``objects.uploader``; objaccess.py)."""

    __tablename__ = "object_uploads"

    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    uploader: Mapped[str] = mapped_column(String(255), primary_key=True)


class Job(Base):
    """A submitted job (docs/architecture.md "Jobs"); ``backend_ref`` is saved, never recomputed."""

    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32))
    vc: Mapped[str] = mapped_column(ForeignKey("vcs.name"), index=True)
    user: Mapped[str] = mapped_column(String(255), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    code: Mapped[dict[str, Any]] = mapped_column(default=dict)
    inputs: Mapped[list[str]] = mapped_column(default=list)  # resolved: [{dataset, mount, version, manifest, version_id}]
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


class AuditEntry(Base):
    """Who did what, when, from where: admin actions and actions on behalf of others (``GET /audit``)."""

    __tablename__ = "audit_log"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(255), index=True)
    actor_kind: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(64), index=True)
    target: Mapped[str] = mapped_column(String(512))
    on_behalf_of: Mapped[str | None] = mapped_column(String(255), nullable=True)
    source: Mapped[str] = mapped_column(String(255))
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)


class IdempotencyKey(Base):
    """The answer to a create request sent with ``Idempotency-Key``: a retry gets it again."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("user", "key", name="uq_idempotency_user_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user: Mapped[str] = mapped_column(String(255))
    key: Mapped[str] = mapped_column(String(255))
    operation: Mapped[str] = mapped_column(String(255))
    request_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[int] = mapped_column(Integer)
    response: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
