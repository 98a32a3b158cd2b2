"""``<prefix>admin``: the old unstyled admin page's address, now a permanent redirect to the admin
console (``<prefix>console``, routes/console.py), which has everything it showed (VCs, quotas,
usage, allocations, the mode) in the hub's look. Bookmarks and links keep working; the console
itself refuses non-admins and sends browsers through the hub's login."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from ..core.context import get_context

router = APIRouter(include_in_schema=False)


@router.get("/admin")
async def admin_page(request: Request) -> RedirectResponse:
    return RedirectResponse(f"{get_context(request).prefix}console", status_code=301)
