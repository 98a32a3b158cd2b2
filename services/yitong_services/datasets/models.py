"""Tables of the dataset capability: datasets, versions, tags, references, the object index
(packs, objects) and object read grants."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from ..core.models import Base, UTCDateTime, utcnow


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
    # what made the version, where the platform knows it (a batch inference job: the job, the
    # model version and the input dataset versions; models/batch_commit.py); {} otherwise
    lineage: Mapped[dict[str, Any]] = mapped_column(default=dict)


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
