"""Background reconciler: drop ``kind=server`` allocations whose server the hub no longer runs.

Runs once at start and then every ``service.reconcile_interval`` seconds (0: only at start).
Only allocations created before the hub was asked are considered, so a spawn that allocates
while the hub's answer is in flight is never dropped.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from anyio import to_thread

from ..core.context import Context
from ..core.hub import HubError
from .allocations import drop_stale_servers

log = logging.getLogger(__name__)


async def reconcile_once(ctx: Context) -> list[dict]:
    asked = datetime.now(UTC)
    active = await ctx.hub.active_servers()
    dropped = await to_thread.run_sync(drop_stale_servers, ctx.db, active, asked)
    for a in dropped:
        log.warning(
            "reconciler dropped allocation %s: server %s of %s in VC %s is no longer running (%s)",
            a["id"],
            a["ref"],
            a["user"],
            a["vc"],
            a["resources"],
        )
    return dropped


async def reconcile_forever(ctx: Context, interval: float) -> None:
    while True:
        try:
            await reconcile_once(ctx)
        except HubError as e:
            log.error("reconciler could not ask the hub: %s", e)
        except Exception:  # keep the loop alive; the next run may succeed
            log.exception("reconciler failed")
        if interval <= 0:
            return
        await asyncio.sleep(interval)
