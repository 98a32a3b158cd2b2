"""Tables: alert rules, routes (who gets email for which VC) and the firing/resolved history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ..core.models import Base, UTCDateTime, utcnow


class AlertRule(Base):
    """A threshold rule over the platform's metrics; ``vc`` null: cluster-wide (no foreign key: a
    deleted VC leaves its rules matching nothing, and the VC's deletion is not blocked by them)."""

    __tablename__ = "alert_rules"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    kind: Mapped[str] = mapped_column(String(32))
    vc: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    expr: Mapped[str] = mapped_column(Text, default="")
    severity: Mapped[str] = mapped_column(String(16))
    for_seconds: Mapped[int] = mapped_column(Integer, default=0)
    description: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AlertRoute(Base):
    """Email addresses for the alerts of one VC (``vc`` null: every alert)."""

    __tablename__ = "alert_routes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vc: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    emails: Mapped[list[str]] = mapped_column(JSON, default=list)
    severities: Mapped[list[str]] = mapped_column(JSON, default=list)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AlertEvent(Base):
    """One firing or resolved notification from Alertmanager's webhook."""

    __tablename__ = "alert_events"
    __table_args__ = (UniqueConstraint("fingerprint", "starts_at", "status", name="uq_alert_events_once"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), index=True)
    alertname: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16), index=True)
    vc: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    severity: Mapped[str] = mapped_column(String(16), default="")
    labels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    annotations: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ends_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    received: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
