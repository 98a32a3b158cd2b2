"""Rules, routes and history in the database (blocking; the routes call these in threads)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..core.errors import Refusal
from ..vcs.models import VC
from . import kinds
from .config import Route, Rule
from .models import AlertEvent, AlertRoute, AlertRule
from .schemas import RouteIn, RuleIn, RulePatch, WebhookAlert

EPOCH_ZERO_YEAR = 1  # Alertmanager's "no end" is 0001-01-01T00:00:00Z


def _vc_exists(s: Session, vc: str | None) -> None:
    if vc is not None and s.scalar(select(VC.id).where(VC.name == vc)) is None:
        raise Refusal(404, f"there is no VC {vc}")


def as_rule(r: AlertRule) -> Rule:
    return Rule(r.name, r.kind, r.threshold, r.severity, r.for_seconds, r.vc, r.expr, r.description)


def as_route(r: AlertRoute) -> Route:
    return Route(r.id, tuple(r.emails), r.vc, tuple(r.severities))


def rule_dict(r: AlertRule, scrape_interval: float) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.name,
        "kind": r.kind,
        "threshold": r.threshold,
        "vc": r.vc,
        "expr": r.expr,
        "severity": r.severity,
        "for_seconds": r.for_seconds,
        "description": r.description,
        "promql": kinds.expression(r.kind, r.threshold, r.vc, r.expr, scrape_interval),
        "created": r.created,
        "updated": r.updated,
    }


def route_dict(r: AlertRoute) -> dict[str, Any]:
    return {"id": r.id, "vc": r.vc, "emails": r.emails, "severities": r.severities, "created": r.created}


def get_rule(s: Session, name: str) -> AlertRule:
    rule = s.scalar(select(AlertRule).where(AlertRule.name == name))
    if rule is None:
        raise Refusal(404, f"there is no alert rule {name}")
    return rule


def checked(kind: str, threshold: float | None, vc: str | None, expr: str) -> float | None:
    try:
        value = kinds.check(kind, threshold, vc, expr)
    except kinds.RuleError as e:
        raise Refusal(422, str(e)) from None
    if kind == "expression":
        problem = kinds.quick_syntax(expr)
        if problem:
            raise Refusal(422, problem)
    return value


def create_rule(s: Session, body: RuleIn) -> AlertRule:
    threshold = checked(body.kind, body.threshold, body.vc, body.expr)
    _vc_exists(s, body.vc)
    if s.scalar(select(AlertRule.id).where(AlertRule.name == body.name)) is not None:
        raise Refusal(409, f"an alert rule named {body.name} exists")
    rule = AlertRule(
        name=body.name,
        kind=body.kind,
        threshold=threshold,
        vc=body.vc,
        expr=body.expr.strip(),
        severity=body.severity,
        for_seconds=body.for_seconds,
        description=body.description,
    )
    s.add(rule)
    s.flush()
    return rule


def patch_rule(s: Session, name: str, body: RulePatch) -> AlertRule:
    rule = get_rule(s, name)
    given = body.model_dump(exclude_unset=True)
    threshold = given["threshold"] if "threshold" in given else rule.threshold
    expr = (given.get("expr") if given.get("expr") is not None else rule.expr) or ""
    rule.threshold = checked(rule.kind, threshold, rule.vc, expr)
    rule.expr = expr.strip()
    for key in ("severity", "for_seconds", "description"):
        if given.get(key) is not None:
            setattr(rule, key, given[key])
    rule.updated = datetime.now(UTC)
    return rule


def create_route(s: Session, body: RouteIn) -> AlertRoute:
    _vc_exists(s, body.vc)
    route = AlertRoute(vc=body.vc, emails=list(dict.fromkeys(body.emails)), severities=sorted(set(body.severities)))
    s.add(route)
    s.flush()
    return route


def get_route(s: Session, route_id: int) -> AlertRoute:
    route = s.get(AlertRoute, route_id)
    if route is None:
        raise Refusal(404, f"there is no alert route {route_id}")
    return route


def store_events(s: Session, alerts: list[WebhookAlert]) -> int:
    """Keep each (alert, start, status) once: Alertmanager repeats a firing alert every
    ``repeat_interval`` and may deliver a notification twice."""
    added = 0
    for a in alerts:
        ends = a.endsAt if a.endsAt is not None and a.endsAt.year > EPOCH_ZERO_YEAR else None
        if a.status == "firing":
            ends = None
        starts = a.startsAt.astimezone(UTC)
        seen = s.scalar(
            select(AlertEvent.id).where(
                AlertEvent.fingerprint == a.fingerprint, AlertEvent.starts_at == starts, AlertEvent.status == a.status
            )
        )
        if seen is not None:
            continue
        s.add(
            AlertEvent(
                fingerprint=a.fingerprint,
                alertname=a.labels.get("alertname", "")[:255],
                status=a.status,
                vc=(a.labels.get("vc") or None) and a.labels["vc"][:32],
                severity=a.labels.get("severity", "")[:16],
                labels=dict(a.labels),
                annotations=dict(a.annotations),
                starts_at=starts,
                ends_at=ends,
            )
        )
        s.flush()
        added += 1
    return added


def event_dict(e: AlertEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "alertname": e.alertname,
        "status": e.status,
        "vc": e.vc,
        "severity": e.severity,
        "labels": e.labels,
        "annotations": e.annotations,
        "starts_at": e.starts_at,
        "ends_at": e.ends_at,
        "received": e.received,
    }


def history(
    s: Session, vc: str | None, status: str | None, alertname: str | None, offset: int, limit: int
) -> dict[str, Any]:
    query = select(AlertEvent)
    if vc is not None:
        query = query.where(AlertEvent.vc == vc)
    if status is not None:
        query = query.where(AlertEvent.status == status)
    if alertname is not None:
        query = query.where(AlertEvent.alertname == alertname)
    total = s.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = s.scalars(query.order_by(AlertEvent.id.desc()).offset(offset).limit(limit))
    return {"items": [event_dict(e) for e in rows], "total": total, "offset": offset, "limit": limit}
