"""The ``alerts`` settings section: the Prometheus/Alertmanager/node exporter processes and SMTP."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SMTPSettings(BaseModel):
    """``alerts.smtp``: where Alertmanager sends email (its ``global.smtp_*`` settings)."""

    model_config = ConfigDict(extra="forbid")

    host: str | None = Field(None, max_length=255, description="SMTP server; null: no email (history only)")
    port: int = Field(25, ge=1, le=65535, description="SMTP port (587 for STARTTLS submission)")
    sender: str = Field("yitong@localhost", max_length=255, description="the From address of alert emails")
    username: str | None = Field(None, max_length=255, description="SMTP AUTH user; null: no authentication")
    password: str | None = Field(None, max_length=1024, description="SMTP AUTH password (written 0600)")
    tls: bool = Field(False, description="require STARTTLS (Alertmanager's smtp_require_tls)")


class AlertsSettings(BaseModel):
    """``alerts``: monitoring and alerting (docs/operations.md). Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")

    run: bool = Field(
        False,
        description="start Prometheus, Alertmanager and the node exporter with the service when they are on PATH"
        " (yitong.example.yaml, which `make run` reads, sets it)",
    )
    ip: str = Field("127.0.0.1", max_length=255, description="address the three processes listen on (loopback)")
    prometheus_port: int = Field(9090, ge=1, le=65535, description="Prometheus's port")
    alertmanager_port: int = Field(9093, ge=1, le=65535, description="Alertmanager's port")
    node_exporter_port: int = Field(9100, ge=0, le=65535, description="the node exporter's port (0: start none)")
    node_targets: list[str] = Field(
        default_factory=list,
        max_length=10000,
        description="further node exporters to scrape, host:port (the cluster's nodes)",
    )
    prometheus_bin: str = Field("prometheus", description="Prometheus's executable (Debian package prometheus)")
    alertmanager_bin: str = Field(
        "prometheus-alertmanager",
        description="Alertmanager's executable (Debian package prometheus-alertmanager; upstream: alertmanager)",
    )
    node_exporter_bin: str = Field(
        "prometheus-node-exporter",
        description="the node exporter's executable (Debian package prometheus-node-exporter; upstream: node_exporter)",
    )
    scrape_interval: float = Field(15.0, ge=1, le=3600, description="seconds between scrapes")
    evaluation_interval: float = Field(15.0, ge=1, le=3600, description="seconds between rule evaluations")
    group_wait: float = Field(10.0, ge=0, le=3600, description="seconds Alertmanager waits to group a new alert")
    group_interval: float = Field(60.0, ge=1, le=86400, description="seconds between notifications of one group")
    repeat_interval: float = Field(14400.0, ge=60, le=604800, description="seconds before a firing alert is re-sent")
    retention: str = Field("15d", pattern=r"^[0-9]+[smhdwy]$", description="how long Prometheus keeps samples")
    failed_job_window: float = Field(
        600.0, ge=10, le=86400, description="seconds a failed job counts in yitong_jobs_failed_recent"
    )
    smtp: SMTPSettings = Field(default_factory=SMTPSettings, description="email (Alertmanager's SMTP settings)")
