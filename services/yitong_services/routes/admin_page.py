"""``<prefix>admin``: an HTML page of VCs, quotas, usage and allocations (admins, browser).

Rendered by Jinja2 with autoescape on: every tenant-supplied string is escaped.
"""

from __future__ import annotations

from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy import select

from ..core.auth import identify
from ..core.confinement import describe
from ..core.context import get_context
from ..core.oauth import login_redirect
from ..vcs.models import VC, Allocation
from ..vcs.quantities import format_amount
from ..vcs.views import allocation_dict, allocations_by_vc, usage, vc_dict

router = APIRouter(include_in_schema=False)
templates = Environment(
    loader=PackageLoader("yitong_services", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
)


def render(ctx, caller: str) -> str:  # type: ignore[no-untyped-def]
    with ctx.db.session() as s:
        by_vc = allocations_by_vc(s)
        vcs = [vc_dict(vc, by_vc.get(vc.name, [])) for vc in s.scalars(select(VC).order_by(VC.name))]
        allocations = [allocation_dict(a) for a in s.scalars(select(Allocation).order_by(Allocation.id))]
        summary = usage(s, ctx.settings.backend, ctx.inventory)
    return templates.get_template("admin.html").render(
        vcs=vcs,
        allocations=allocations,
        usage=summary,
        caller=caller,
        prefix=ctx.prefix,
        fmt=format_amount,
        confinement=describe(ctx.settings) if ctx.settings.backend == "local" else None,
    )


@router.get("/admin", response_class=HTMLResponse)
async def admin_page(request: Request) -> Response:
    ctx = get_context(request)
    caller = await identify(request, ctx)
    if caller is None:
        if request.app.state.oauth is None:
            return HTMLResponse("<!doctype html><p>Sign in through JupyterHub.</p>", status_code=401)
        return login_redirect(request, ctx, request.app.state.oauth)
    if not caller.privileged:
        return HTMLResponse(
            templates.from_string("<!doctype html><p>{{ who }} is not a JupyterHub admin.</p>").render(who=caller.name),
            status_code=403,
        )
    return HTMLResponse(await to_thread.run_sync(render, ctx, caller.name))
