"""Tables of the VC capability: VCs, profiles, allocations (resources as JSON), the seed log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
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


class SeedLog(Base):
    """Names seeded from the settings file once; an admin's later delete is not undone."""

    __tablename__ = "seed_log"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
