"""``<prefix>console``: the admin console's pages (admins, browser), in JupyterHub's own page.

GET only, authenticated like the rest of the service (the HubOAuth cookie, or a token header).
The pages never write: their forms call the REST API with ``fetch`` and the page's OAuth token
in the ``Authorization`` header (docs/operations.md, "How the console writes"), so every change
goes through the same routes, checks and audit log as the CLI's. Rendered by Jinja2 with
autoescape on: every tenant-supplied string is escaped.
"""

from __future__ import annotations

import os
from typing import Any

from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PackageLoader, PrefixLoader, select_autoescape
from jupyterhub._data import DATA_FILES_PATH
from sqlalchemy import func, select

from ..core.auth import identify, request_token
from ..core.confinement import describe
from ..core.context import Context, get_context
from ..core.hub import HubError
from ..core.limits import human
from ..core.oauth import login_redirect
from ..hpo.models import Experiment
from ..jobs.models import Job
from ..ops import console
from ..vcs.models import VC, Allocation, Profile, StorageMeasure
from ..vcs.storage import uses as storage_uses
from ..vcs.views import allocation_dict, allocations_by_vc, cluster, profile_dict, vc_dict

router = APIRouter(include_in_schema=False)
templates = Environment(
    loader=ChoiceLoader(
        [
            PackageLoader("yitong_services", "templates"),
            # JupyterHub's own templates, as "templates/page.html" (what the hub's custom templates extend)
            PrefixLoader({"templates": FileSystemLoader(os.path.join(DATA_FILES_PATH, "templates"))}),
        ]
    ),
    autoescape=select_autoescape(default=True, default_for_string=True),
)
PEOPLE_JOBS = 500  # newest jobs and experiments listed on the people page


async def _admin(request: Request) -> tuple[Context, str, str] | Response:
    """``(ctx, admin's name, token)``, or the response for anyone else (login redirect, 403)."""
    ctx = get_context(request)
    caller = await identify(request, ctx)
    if caller is None:
        if request.app.state.oauth is None:
            return HTMLResponse("<!doctype html><p>Sign in through JupyterHub.</p>", status_code=401)
        return login_redirect(request, ctx, request.app.state.oauth)
    if not caller.privileged:
        page = templates.from_string("<!doctype html><p>{{ who }} is not a JupyterHub admin.</p>")
        return HTMLResponse(page.render(who=caller.name), status_code=403)
    return ctx, caller.name, request_token(request, ctx) or ""


def _page(ctx: Context, caller: str, token: str, template: str, active: str, title: str, **values: Any) -> Response:
    html = templates.get_template(template).render(
        **console.hub_page_vars(os.environ.get("JUPYTERHUB_BASE_URL", "/"), caller),
        console_nav=console.nav(ctx.prefix, active),
        console_prefix=ctx.prefix,
        api=f"{ctx.prefix}api/v1/",
        token=token,
        title=title,
        caller=caller,
        **values,
    )
    # the page carries the admin's token for its fetch() calls: never cached, never referred
    headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
    return HTMLResponse(html, headers=headers)


def _catalogue(ctx: Context) -> dict[str, Any]:
    with ctx.db.session() as s:
        by_vc = allocations_by_vc(s)
        rows = list(s.scalars(select(VC).order_by(VC.name)))
        stored = storage_uses(s, rows)
        where = cluster(s, ctx.inventory)
        vcs = [vc_dict(vc, by_vc.get(vc.name, []), stored[vc.name], where) for vc in rows]
        measures = list(s.scalars(select(StorageMeasure)))
        homes = [{"name": m.name, "bytes": m.bytes, "files": m.files} for m in measures if m.kind == "home"]
        walked = console.walk_note(
            max((m.measured for m in measures), default=None),
            len(homes),
            len(measures) - len(homes),
            ctx.settings.storage.usage_interval,
        )
        profiles = [profile_dict(p) for p in s.scalars(select(Profile).order_by(Profile.name))]
    offered: dict[str, list[str]] = {}
    for vc in vcs:
        for p in vc["profiles"]:
            offered.setdefault(p, []).append(vc["name"])
    names = console.resource_names(ctx.inventory, ctx.settings.devices, *(vc["quota"] for vc in vcs))
    return {"vcs": vcs, "profiles": profiles, "offered": offered, "resources": names, "homes": homes, "walked": walked}


def _index(ctx: Context, caller: str, token: str, monitoring: dict[str, Any] | None = None) -> Response:
    cat = _catalogue(ctx)
    return _page(
        ctx,
        caller,
        token,
        "console/index.html",
        "console",
        "VCs and profiles",
        vcs=console.vc_rows(cat["vcs"]),
        profiles=console.profile_rows(cat["profiles"], cat["offered"]),
        form=console.vc_form(None, cat["resources"]),
        pform=console.profile_form(None),
        resources=cat["resources"],
        all_profiles=[p["name"] for p in cat["profiles"]],
        backend=ctx.settings.backend,
        inventory=console.described(ctx.inventory),
        confinement=describe(ctx.settings) if ctx.settings.backend == "local" else None,
        monitoring=monitoring,
        storage=console.storage_rows(cat["vcs"]),
        homes=console.home_rows(cat["homes"]),
        storage_note=cat["walked"],
    )


@router.get("/console", response_class=HTMLResponse)
async def console_page(request: Request) -> Response:
    who = await _admin(request)
    if isinstance(who, Response):
        return who
    alerts = getattr(request.app.state, "alerts", None)  # the monitoring's state (alerts/manager.py)
    return await to_thread.run_sync(_index, *who, console.monitoring(alerts.status()) if alerts else None)


def _vc(ctx: Context, caller: str, token: str, name: str) -> Response:
    cat = _catalogue(ctx)
    vc = next((v for v in cat["vcs"] if v["name"] == name), None)
    if vc is None:
        return _missing(f"there is no VC {name}")
    with ctx.db.session() as s:
        queued = s.scalar(select(func.count()).where(Job.vc == name, Job.state == "queued"))
    return _page(
        ctx,
        caller,
        token,
        "console/vc.html",
        "console",
        f"VC {name}",
        form=console.vc_form(vc, cat["resources"]),
        resources=cat["resources"],
        all_profiles=[p["name"] for p in cat["profiles"]],
        used=console.described(vc["used"]),
        queued=queued,
    )


def _missing(sentence: str) -> Response:
    return HTMLResponse(templates.from_string("<!doctype html><p>{{ s }}</p>").render(s=sentence), status_code=404)


@router.get("/console/vcs/{name}", response_class=HTMLResponse)
async def console_vc(name: str, request: Request) -> Response:
    who = await _admin(request)
    if isinstance(who, Response):
        return who
    return await to_thread.run_sync(_vc, *who, name[:64])


def _profile(ctx: Context, caller: str, token: str, name: str) -> Response:
    cat = _catalogue(ctx)
    profile = next((p for p in cat["profiles"] if p["name"] == name), None)
    if profile is None:
        return _missing(f"there is no profile {name}")
    return _page(
        ctx,
        caller,
        token,
        "console/profile.html",
        "console",
        f"Profile {name}",
        pform=console.profile_form(profile),
        offered=cat["offered"].get(name, []),
    )


@router.get("/console/profiles/{name}", response_class=HTMLResponse)
async def console_profile(name: str, request: Request) -> Response:
    who = await _admin(request)
    if isinstance(who, Response):
        return who
    return await to_thread.run_sync(_profile, *who, name[:64])


def _people_rows(ctx: Context, users: list[dict]) -> list[dict]:
    with ctx.db.session() as s:
        allocations = [allocation_dict(a) for a in s.scalars(select(Allocation).order_by(Allocation.id))]
        jobs = [
            {"id": j.id, "name": j.name, "vc": j.vc, "user": j.user, "state": j.state}
            for j in s.scalars(select(Job).order_by(Job.id.desc()).limit(PEOPLE_JOBS))
        ]
        experiments = [
            {"id": e.id, "name": e.name, "vc": e.vc, "user": e.user, "state": e.state}
            for e in s.scalars(select(Experiment).order_by(Experiment.id.desc()).limit(PEOPLE_JOBS))
        ]
    return console.people(users, allocations, jobs, experiments)


def _vc_choices(ctx: Context) -> list[dict]:
    """The VCs the "Add person" form offers, with their groups (the first is the one joined)."""
    with ctx.db.session() as s:
        return [{"name": vc.name, "groups": list(vc.groups or [])} for vc in s.scalars(select(VC).order_by(VC.name))]


@router.get("/console/people", response_class=HTMLResponse)
async def console_people(request: Request) -> Response:
    who = await _admin(request)
    if isinstance(who, Response):
        return who
    ctx = who[0]
    note = ""
    try:
        users = await ctx.hub.users()
    except HubError as e:
        users, note = [], f" (the hub's list of servers is missing: {e})"
    rows = await to_thread.run_sync(_people_rows, ctx, users)
    choices = await to_thread.run_sync(_vc_choices, ctx)
    return _page(
        *who, "console/people.html", "people", "People", people=rows, limit=PEOPLE_JOBS, note=note, vc_choices=choices
    )


def _vc_timeouts(ctx: Context) -> dict[str, int]:
    """The VCs' idle timeouts as the per-VC culler reads them (ops/culler.py)."""
    with ctx.db.session() as s:
        return dict(s.execute(select(VC.name, VC.idle_timeout).where(VC.idle_timeout.is_not(None))).all())


@router.get("/console/dashboard", response_class=HTMLResponse)
async def console_dashboard(request: Request) -> Response:
    who = await _admin(request)
    if isinstance(who, Response):
        return who
    settings = who[0].settings
    timeouts = await to_thread.run_sync(_vc_timeouts, who[0])
    policy = console.culling_policy(settings.culling.model_dump() | {"vcs": timeouts})
    reclaim = console.reclaim_policy(settings.reclaim.model_dump())
    return _page(*who, "console/dashboard.html", "dashboard", "Cluster dashboard", culling=policy, reclaim=reclaim)


@router.get("/console/logs", response_class=HTMLResponse)
async def console_logs(request: Request) -> Response:
    from ..ops.logs import sources

    who = await _admin(request)
    if isinstance(who, Response):
        return who
    ctx = who[0]
    ops = ctx.settings.ops
    return _page(
        *who,
        "console/logs.html",
        "logs",
        "Logs",
        sources=await to_thread.run_sync(sources, ctx.settings.data_dir / "logs"),
        scan=human(ops.log_scan_bytes),
        rotate=human(ops.log_max_bytes),
        backups=ops.log_backups,
    )
