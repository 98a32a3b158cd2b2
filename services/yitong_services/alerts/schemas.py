"""Request and response models of the alerts API."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..vcs.schemas import Name

Severity = Literal["info", "warning", "critical"]
EMAIL_RE = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*$")
LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,63}$")


def _email(value: str) -> str:
    if not EMAIL_RE.match(value) or len(value) > 254:
        raise ValueError(f"{value!r} is not an email address like ops@example.com")
    return value


def _label(value: str) -> str:
    if not LABEL_RE.match(value):
        raise ValueError(f"{value!r} is not a label name (letters, digits and _, not starting with a digit)")
    return value


def _utf8(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the text holds characters that are not Unicode text (lone surrogates)") from None
    return value


Email = Annotated[str, AfterValidator(_email)]
LabelName = Annotated[str, AfterValidator(_label)]
Text = Annotated[str, Field(max_length=1000), AfterValidator(_utf8)]
Expr = Annotated[str, Field(max_length=2000), AfterValidator(_utf8)]


class RuleIn(BaseModel):
    """A threshold rule: ``kind`` and ``threshold`` (the kind's default when left out), limited to a VC
    or cluster-wide, firing after ``for_seconds`` of the condition holding."""

    model_config = ConfigDict(extra="forbid")

    name: Name
    kind: str = Field(
        max_length=32,
        description="node_memory, node_cpu, accelerator_utilization, accelerator_idle, job_failed,"
        " quota_exhausted, storage_quota, disk_full, disk_free, service_down or expression (docs/operations.md)",
    )
    threshold: float | None = Field(
        None, description="percent for utilisation, quota and disk_full kinds, jobs for job_failed, GiB for disk_free"
    )
    vc: Name | None = Field(None, description="the VC the rule watches; null: cluster-wide")
    expr: Expr = Field("", description="expression rules only: a PromQL condition")
    severity: Severity = "warning"
    for_seconds: int = Field(0, ge=0, le=86400, description="seconds the condition holds before the alert fires")
    description: Text = ""


class RulePatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    threshold: float | None = None
    expr: Expr | None = None
    severity: Severity | None = None
    for_seconds: int | None = Field(None, ge=0, le=86400)
    description: Text | None = None


class RuleOut(BaseModel):
    id: int
    name: str
    kind: str
    threshold: float | None
    vc: str | None
    expr: str
    severity: str
    for_seconds: int
    description: str
    promql: str = Field(description="what Prometheus evaluates")
    created: datetime
    updated: datetime


class RouteIn(BaseModel):
    """Email addresses for a VC's alerts (``vc`` null: every alert), optionally only some severities."""

    model_config = ConfigDict(extra="forbid")

    vc: Name | None = None
    emails: list[Email] = Field(min_length=1, max_length=50)
    severities: list[Severity] = Field(default_factory=list, max_length=3)


class RouteOut(BaseModel):
    id: int
    vc: str | None
    emails: list[str]
    severities: list[str]
    created: datetime


class SilenceIn(BaseModel):
    """Silence alerts whose labels equal all of ``matchers`` (e.g. vc=vision, or alertname=mem-high)
    for ``seconds``."""

    model_config = ConfigDict(extra="forbid")

    matchers: dict[LabelName, Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_utf8)]] = Field(
        min_length=1, max_length=8
    )
    seconds: int = Field(3600, ge=60, le=30 * 86400)
    comment: Annotated[str, Field(min_length=1, max_length=500), AfterValidator(_utf8)]


class SilenceOut(BaseModel):
    id: str
    matchers: dict[str, str]
    starts_at: str
    ends_at: str
    created_by: str
    comment: str
    state: str


class EventOut(BaseModel):
    id: int
    alertname: str
    status: str
    vc: str | None
    severity: str
    labels: dict[str, Any]
    annotations: dict[str, Any]
    starts_at: datetime
    ends_at: datetime | None
    received: datetime


class History(BaseModel):
    items: list[EventOut]
    total: int
    offset: int
    limit: int


class Component(BaseModel):
    installed: bool
    state: str = Field(
        description="missing | stopped | starting | running | exited | off | error (its port is held by another"
        " process: ``detail`` names it and the setting to change)"
    )
    url: str | None
    detail: str


class AlertsStatus(BaseModel):
    prometheus: Component
    alertmanager: Component
    node_exporter: Component
    email: bool = Field(description="an SMTP host is set (alerts.smtp.host)")
    accelerators: bool = Field(description="accelerator figures are read through NVML")
    message: str | None = Field(description="what to install or set, when something is missing")


class WebhookAlert(BaseModel):
    """One alert of Alertmanager's webhook payload (the fields kept)."""

    model_config = ConfigDict(extra="ignore")

    status: Literal["firing", "resolved"]
    labels: dict[str, Annotated[str, Field(max_length=1024)]] = Field(max_length=64)
    annotations: dict[str, Annotated[str, Field(max_length=4096)]] = Field(default_factory=dict, max_length=64)
    startsAt: datetime
    endsAt: datetime | None = None
    fingerprint: str = Field(max_length=64)


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    alerts: list[WebhookAlert] = Field(max_length=1000)
