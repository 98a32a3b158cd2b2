"""Tables of the VC capability: VCs, profiles, allocations (resources as JSON), the seed log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from ..core.models import Base, UTCDateTime, utcnow


class VC(Base):
    __tablename__ = "vcs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    quota: Mapped[dict[str, Any]] = mapped_column(default=dict)
    groups: Mapped[list[str]] = mapped_column(default=list)
    profiles: Mapped[list[str]] = mapped_column(default=list)
    user_caps: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # seconds idle before the platform stops a server of this VC (ops/culler.py); None: the hub's culling.timeout
    idle_timeout: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    # bytes the VC may keep in the dataset store (datasets, models) and its jobs' folders
    # (vcs/storage.py); None: no limit
    storage_quota: Mapped[int | None] = mapped_column(BigInteger, nullable=True, default=None)
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
    # where its accelerators are, when the platform placed them (local backend):
    # {"node": host, "type": "nvidia.com/gpu", "visible": [indices]} (vcs/placement.py)
    devices: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True, default=None)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class VCObject(Base):
    """An object of the dataset store charged to a VC (vcs/storage.py): uploaded for it, or named
    by one of its dataset or model versions. A VC pays once for each object it holds, whoever
    else holds the same bytes; the charge goes when no version of the VC names the object."""

    __tablename__ = "vc_objects"

    vc: Mapped[str] = mapped_column(String(32), primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    # uploaded for the VC and named by no version yet: kept for the store's grace period
    pending: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class StorageMeasure(Base):
    """What the storage walk (ops/storage_walk.py) last measured of a folder: a person's home
    (``kind`` "home", ``name`` the person) or a job's folder (``kind`` "job", ``name`` its id,
    ``vc`` its VC). Job folders count toward their VC's storage quota."""

    __tablename__ = "storage_measures"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    vc: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    files: Mapped[int] = mapped_column(Integer, default=0)
    measured: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SeedLog(Base):
    """Names seeded from the settings file once; an admin's later delete is not undone."""

    __tablename__ = "seed_log"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
