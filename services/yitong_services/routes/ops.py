"""Operations (admins): the cluster dashboard, node reports, cluster and node logs."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy import func, select

from ..core.authz import Identity
from ..core.errors import Refusal
from ..jobs.models import Job
from ..ops import dashboard as board
from ..ops import logs as logfiles
from ..ops.monitor import Monitor
from ..ops.schemas import Dashboard, LogPage, NodeReport, ReclaimWarnings
from ..vcs import quota
from ..vcs.models import VC, Allocation
from .common import Caller, Ctx, require_admin

router = APIRouter(tags=["operations"])


def _dashboard(ctx, monitor: Monitor) -> dict:  # type: ignore[no-untyped-def]
    """Four bounded queries (VCs; allocations' VC, user and resources; jobs by state; queued
    jobs by VC, both counted by the database), then the pure builder."""
    with ctx.db.session() as s:
        vcs = s.execute(select(VC.name, VC.quota).order_by(VC.name)).all()
        held = s.execute(select(Allocation.vc, Allocation.user, Allocation.resources)).all()
        jobs = dict(s.execute(select(Job.state, func.count()).group_by(Job.state)).all())
        queued = dict(s.execute(select(Job.vc, func.count()).where(Job.state == "queued").group_by(Job.vc)).all())
    by_vc: dict[str, list[quota.Held]] = {}
    for vc, user, resources in held:
        by_vc.setdefault(vc, []).append(quota.Held(user=user, resources=resources))
    return board.build(
        backend=ctx.settings.backend,
        nodes=[monitor.local_node(quota.total(r for _, _, r in held)), *monitor.registry.snapshot()],
        vcs=[{"name": n, "quota": q, "used": quota.used(q, by_vc.get(n, []))} for n, q in vcs],
        queued=queued,
        jobs=jobs,
        history=list(monitor.history),
        now=time.time(),
        stale=ctx.settings.ops.node_stale,
        cache=monitor.view_cache(),
    )


@router.get("/dashboard", response_model=Dashboard)
def dashboard(caller: Caller, ctx: Ctx, request: Request) -> Response:
    """Admin: nodes (allocatable, allocated, used, services' health, anomalies; worst first), a
    heat value per node, VC usage and queues (now and over time), jobs by state."""
    require_admin(caller, "read the cluster dashboard")
    # built from typed values by the pure builder (its shape is tested): written out directly,
    # not validated again field by field against the response model (500 nodes: 4x faster)
    body = json.dumps(_dashboard(ctx, request.app.state.monitor), separators=(",", ":"))
    return Response(body, media_type="application/json")


@router.post("/nodes/report", status_code=204)
def report_node(body: NodeReport, caller: Caller, request: Request) -> None:
    """Admin or the platform's token: a node's agent reports its capacity, reservations, use and
    services (kept in memory, the latest report per node)."""
    require_admin(caller, "report nodes")
    request.app.state.monitor.registry.report(body.model_dump())


def _when(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "")).replace(tzinfo=None)
    except ValueError:
        raise Refusal(422, f"{name}: {value!r} is not a time like 2026-11-25T21:00") from None


@router.get("/logs", response_model=LogPage)
def search_logs(
    caller: Caller,
    ctx: Ctx,
    source: Annotated[list[str] | None, Query(max_length=64)] = None,
    level: Annotated[str, Query(pattern="^(debug|info|warning|error|critical)$")] = "info",
    since: Annotated[str | None, Query(max_length=40)] = None,
    until: Annotated[str | None, Query(max_length=40)] = None,
    q: Annotated[str, Query(max_length=200)] = "",
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict:
    """Admin: cluster and node log lines, newest first, filtered by source, level, time (UTC) and
    text; each search reads at most ``ops.log_scan_bytes`` from the files' ends."""
    require_admin(caller, "read the platform's logs")
    logs_dir = ctx.settings.data_dir / "logs"
    known = logfiles.sources(logs_dir)
    names = source or [*known["cluster"], *known["node"]]
    for name in names:
        if len(name) > 300:
            raise Refusal(422, "a log source name is at most 300 characters")
        try:
            logfiles.files_of(logs_dir, name)
        except ValueError as e:
            raise Refusal(422, str(e)) from None
    found, scanned, truncated = logfiles.search(
        logs_dir,
        names,
        level=level,
        since=_when(since, "since"),
        until=_when(until, "until"),
        text=q,
        limit=limit,
        scan_bytes=ctx.settings.ops.log_scan_bytes,
    )
    return {
        "sources": known,
        "lines": [
            {"source": e.source, "at": e.at.isoformat() if e.at else None, "level": e.level, "text": e.text}
            for e in found
        ],
        "scanned_bytes": scanned,
        "truncated": truncated,
    }


@router.get("/reclaim")
def reclaim_decisions(caller: Caller, request: Request) -> dict:
    """The accelerator reclaim's policy and its latest decision per server holding an
    accelerator (keep, warn, stop, with the reason), and the latest stops; admins see every
    server, others their own."""
    reclaimer = request.app.state.reclaimer
    return {
        "policy": reclaimer.policy.model_dump(),
        "servers": [d for d in reclaimer.decisions.values() if _sees(caller, d)],
        "stopped": [d for d in reclaimer.stopped if _sees(caller, d)],
    }


@router.get("/reclaim/warnings", response_model=ReclaimWarnings)
def reclaim_warnings(
    caller: Caller,
    request: Request,
    server: Annotated[
        str | None, Query(max_length=255, description="only this server of the caller's ('' the default)")
    ] = None,
) -> dict:
    """The caller's own servers that the accelerator reclaim has warned and not yet stopped: when
    each will be stopped unless used, and why (the JupyterLab extension shows them as a
    notification). Everyone sees only their own, admins included; other tokens see none."""
    reclaimer = request.app.state.reclaimer
    mine = reclaimer.warnings(caller.name) if caller.kind == "user" else []
    if server is not None:
        mine = [d for d in mine if d["ref"] == f"{caller.name}/{server}"]
    return {
        "warnings": [
            {
                "ref": d["ref"],
                "server": d["ref"].split("/", 1)[1],
                "vc": d["vc"],
                "devices": d["devices"],
                "reason": d["reason"],
                "measured": d.get("measured", ""),
                "warned_at": d["warned_at"],
                "stop_at": d["stop_at"],
            }
            for d in mine
        ]
    }


def _sees(caller: Identity, decision: dict) -> bool:
    """Admins see every server's decision, a person their own servers'."""
    owner = decision.get("ref", "").split("/", 1)[0]
    return caller.privileged or (caller.kind == "user" and owner == caller.name)
