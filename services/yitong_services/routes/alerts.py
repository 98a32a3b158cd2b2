"""Alerts, for admins: rules, email routes, silences, the firing/resolved history and the status of
Prometheus/Alertmanager; and the webhook Alertmanager posts to (its per-install secret)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError
from sqlalchemy import select

from ..alerts import records
from ..alerts.manager import AlertsManager
from ..alerts.models import AlertRoute, AlertRule
from ..alerts.promtool import check_expression
from ..alerts.schemas import (
    AlertsStatus,
    History,
    RouteIn,
    RouteOut,
    RuleIn,
    RuleOut,
    RulePatch,
    SilenceIn,
    SilenceOut,
    WebhookIn,
)
from ..core import audit
from ..core.authz import Identity
from ..core.context import Context
from ..core.errors import Refusal
from ..core.settings import describe
from .common import Caller, Ctx, Id, require_admin

router = APIRouter(prefix="/alerts", tags=["alerts"])


async def _manager(request: Request) -> AlertsManager:
    return request.app.state.alerts


Alerts = Annotated[AlertsManager, Depends(_manager)]
SilenceId = Annotated[str, Path(pattern=r"^[0-9a-f-]{36}$", description="a silence's id (a UUID)")]


def _scrape(ctx: Context) -> float:
    return ctx.settings.alerts.scrape_interval


@router.get("/status", response_model=AlertsStatus)
def status(caller: Caller, alerts: Alerts) -> dict:
    """Admin: whether Prometheus, Alertmanager and the node exporter are installed and running,
    whether email and accelerator figures are on, and what to install or set when not."""
    require_admin(caller, "read the alerting status")
    return alerts.status()


@router.get("/rules", response_model=list[RuleOut])
def list_rules(caller: Caller, ctx: Ctx) -> list[dict]:
    """Admin: every alert rule with the PromQL Prometheus evaluates."""
    require_admin(caller, "read alert rules")
    with ctx.db.session() as s:
        return [records.rule_dict(r, _scrape(ctx)) for r in s.scalars(select(AlertRule).order_by(AlertRule.name))]


async def _check_expr(ctx: Context, expr: str | None) -> None:
    if expr and expr.strip():
        problem = await check_expression(expr.strip(), ctx.settings.data_dir.absolute() / "alerts" / "tmp")
        if problem:
            raise Refusal(422, problem)


@router.post("/rules", response_model=RuleOut, status_code=201)
async def create_rule(body: RuleIn, caller: Caller, ctx: Ctx, alerts: Alerts, request: Request) -> dict:
    """Admin: add a rule (422 naming what is wrong with its kind, threshold or expression; 404 for an
    unknown VC; 409 if the name exists); the rule file is rewritten and Prometheus reloaded."""
    require_admin(caller, "manage alert rules")
    if body.kind == "expression":
        records.checked(body.kind, body.threshold, body.vc, body.expr)
        await _check_expr(ctx, body.expr)

    out = await run_in_threadpool(_create_rule, ctx, caller, request, body)
    await alerts.apply()
    return out


@router.get("/rules/{name}", response_model=RuleOut)
def get_rule(name: str, caller: Caller, ctx: Ctx) -> dict:
    """Admin: one rule."""
    require_admin(caller, "read alert rules")
    with ctx.db.session() as s:
        return records.rule_dict(records.get_rule(s, name), _scrape(ctx))


@router.patch("/rules/{name}", response_model=RuleOut)
async def patch_rule(name: str, body: RulePatch, caller: Caller, ctx: Ctx, alerts: Alerts, request: Request) -> dict:
    """Admin: change a rule's threshold, expression, severity, duration or description."""
    require_admin(caller, "manage alert rules")
    await _check_expr(ctx, body.expr)

    out = await run_in_threadpool(_patch_rule, ctx, caller, request, name, body)
    await alerts.apply()
    return out


@router.delete("/rules/{name}", status_code=204)
async def delete_rule(name: str, caller: Caller, ctx: Ctx, alerts: Alerts, request: Request) -> Response:
    """Admin: delete a rule (its alerts resolve)."""
    require_admin(caller, "manage alert rules")

    await run_in_threadpool(_delete_rule, ctx, caller, request, name)
    await alerts.apply()
    return Response(status_code=204)


@router.get("/routes", response_model=list[RouteOut])
def list_routes(caller: Caller, ctx: Ctx) -> list[dict]:
    """Admin: who gets email for which VC's alerts."""
    require_admin(caller, "read alert routes")
    with ctx.db.session() as s:
        return [records.route_dict(r) for r in s.scalars(select(AlertRoute).order_by(AlertRoute.id))]


@router.post("/routes", response_model=RouteOut, status_code=201)
async def create_route(body: RouteIn, caller: Caller, ctx: Ctx, alerts: Alerts, request: Request) -> dict:
    """Admin: email these addresses about a VC's alerts (``vc`` null: every alert)."""
    require_admin(caller, "manage alert routes")

    out = await run_in_threadpool(_create_route, ctx, caller, request, body)
    await alerts.apply()
    return out


@router.delete("/routes/{route_id}", status_code=204)
async def delete_route(route_id: Id, caller: Caller, ctx: Ctx, alerts: Alerts, request: Request) -> Response:
    """Admin: stop a route's emails."""
    require_admin(caller, "manage alert routes")

    await run_in_threadpool(_delete_route, ctx, caller, request, route_id)
    await alerts.apply()
    return Response(status_code=204)


@router.get("/silences", response_model=list[SilenceOut])
async def list_silences(caller: Caller, alerts: Alerts) -> list[dict]:
    """Admin: Alertmanager's silences (409 with what to install or start when it is not running)."""
    require_admin(caller, "read silences")
    return await alerts.silences()


@router.post("/silences", response_model=SilenceOut, status_code=201)
async def create_silence(body: SilenceIn, caller: Caller, ctx: Ctx, alerts: Alerts, request: Request) -> dict:
    """Admin: silence the alerts whose labels equal ``matchers`` for ``seconds``."""
    require_admin(caller, "silence alerts")
    out = await alerts.silence(body.matchers, body.seconds, body.comment, caller.name)
    await run_in_threadpool(_audit, ctx, caller, request, "alert_silence.create", out["id"], body.model_dump())
    return out


@router.delete("/silences/{silence_id}", status_code=204)
async def expire_silence(silence_id: SilenceId, caller: Caller, ctx: Ctx, alerts: Alerts, request: Request) -> Response:
    """Admin: end a silence now."""
    require_admin(caller, "silence alerts")
    await alerts.expire(silence_id)
    await run_in_threadpool(_audit, ctx, caller, request, "alert_silence.expire", silence_id, {})
    return Response(status_code=204)


def _audit(ctx: Context, caller: Identity, request: Request, action: str, target: str, detail: dict) -> None:
    with ctx.db.writing() as s:
        audit.record(s, caller, request, action, f"silence {target}", detail=detail)


@router.get("/history", response_model=History)
def history(
    caller: Caller,
    ctx: Ctx,
    vc: str | None = Query(None, max_length=32),
    status: Literal["firing", "resolved"] | None = Query(None),
    alertname: str | None = Query(None, max_length=255),
    offset: int = Query(0, ge=0, le=2**31),
    limit: int = Query(100, ge=1, le=1000),
) -> dict:
    """Admin: alerts as they fired and resolved (Alertmanager's notifications), newest first."""
    require_admin(caller, "read the alert history")
    with ctx.db.session() as s:
        return records.history(s, vc, status, alertname, offset, limit)


@router.post("/webhook", status_code=204)
async def webhook(
    request: Request, ctx: Ctx, alerts: Alerts, authorization: Annotated[str, Header(max_length=512)] = ""
) -> Response:
    """Alertmanager only (``Authorization: Bearer <data_dir>/alerts/webhook-secret``): firing and
    resolved alerts into the history (a webhook payload, version 4)."""
    refused = alerts.webhook_refusal(authorization)
    if refused:
        raise Refusal(401, refused)
    try:
        body = WebhookIn.model_validate_json(await request.body())
    except ValidationError as e:
        raise Refusal(422, f"not an Alertmanager webhook payload: {describe(e)}") from None
    await run_in_threadpool(_store, ctx, body)
    return Response(status_code=204)


# the blocking parts of the async routes above (the database), run in the threadpool


def _create_rule(ctx: Context, caller: Identity, request: Request, body: RuleIn) -> dict:
    with ctx.db.writing() as s:
        rule = records.create_rule(s, body)
        audit.record(s, caller, request, "alert_rule.create", f"alert rule {body.name}", detail=body.model_dump())
        return records.rule_dict(rule, _scrape(ctx))


def _patch_rule(ctx: Context, caller: Identity, request: Request, name: str, body: RulePatch) -> dict:
    with ctx.db.writing() as s:
        rule = records.patch_rule(s, name, body)
        detail = body.model_dump(exclude_unset=True)
        audit.record(s, caller, request, "alert_rule.patch", f"alert rule {name}", detail=detail)
        return records.rule_dict(rule, _scrape(ctx))


def _delete_rule(ctx: Context, caller: Identity, request: Request, name: str) -> None:
    with ctx.db.writing() as s:
        s.delete(records.get_rule(s, name))
        audit.record(s, caller, request, "alert_rule.delete", f"alert rule {name}")


def _create_route(ctx: Context, caller: Identity, request: Request, body: RouteIn) -> dict:
    with ctx.db.writing() as s:
        route = records.create_route(s, body)
        audit.record(s, caller, request, "alert_route.create", f"alert route {route.id}", detail=body.model_dump())
        return records.route_dict(route)


def _delete_route(ctx: Context, caller: Identity, request: Request, route_id: int) -> None:
    with ctx.db.writing() as s:
        s.delete(records.get_route(s, route_id))
        audit.record(s, caller, request, "alert_route.delete", f"alert route {route_id}")


def _store(ctx: Context, body: WebhookIn) -> None:
    with ctx.db.writing() as s:
        records.store_events(s, body.alerts)
