"""Per-VC idle culling, driven by the platform: a VC's ``idle_timeout`` (set in the console, or
seeded from the settings' ``culling.vcs``) is read from the database on every pass, so a change
holds from the next pass without restarting anything.

The hub's ``jupyterhub-idle-culler`` service keeps the platform-wide ``culling.timeout`` (hub
config, read at hub start). A VC's timeout is this task's: every pass it lists the servers'
allocations of the VCs that have one (the allocation says which VC a server serves, so
group membership does not matter), asks the hub for each server's ``last_activity`` and stops
(``DELETE`` through the hub, which releases the allocation) those idle longer than their VC's
timeout. :func:`idle_for` is the decision (pure, tested as a table).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import httpx
from anyio import to_thread
from sqlalchemy import select

from ..core.context import Context
from ..core.hub import HubError
from ..core.periodic import Periodic
from ..vcs.models import VC, Allocation
from .reclaim import _ts, stop_server
from .schemas import CullingSettings

log = logging.getLogger("yitong_services.ops.culler")


def idle_for(server: Mapping[str, Any] | None, now: float) -> float | None:
    """Seconds the hub's server model has been idle; None when it is not a running server
    (gone, starting or stopping) or its activity is unknown."""
    if not server or not server.get("ready") or server.get("pending"):
        return None
    last = _ts(server.get("last_activity")) or _ts(server.get("started"))
    return None if last is None else max(0.0, now - last)


def pass_interval(culling: CullingSettings, timeouts: list[int]) -> float:
    """``culling.every`` when set, else a tenth of the shortest VC timeout (30 s to 5 min)."""
    if culling.every:
        return float(culling.every)
    return float(min(300, max(30, min(timeouts) // 10))) if timeouts else 60.0


class VCCuller(Periodic):
    what = "per-VC idle culler"

    def __init__(self, ctx: Context, culling: CullingSettings) -> None:
        self.ctx = ctx
        self.culling = culling
        self.timeouts: dict[str, int] = {}  # the VCs' timeouts as the last pass read them
        self.stopped: list[dict[str, Any]] = []  # the latest stops, newest last

    @property
    def interval(self) -> float:
        return pass_interval(self.culling, list(self.timeouts.values()))

    async def start(self) -> None:
        if self.ctx.hub.token:
            await super().start()

    def _servers(self) -> tuple[dict[str, int], list[tuple[str, str, str]]]:
        with self.ctx.db.session() as s:
            timeouts = dict(s.execute(select(VC.name, VC.idle_timeout).where(VC.idle_timeout.is_not(None))).all())
            rows = s.execute(
                select(Allocation.user, Allocation.vc, Allocation.ref).where(
                    Allocation.kind == "server", Allocation.vc.in_(list(timeouts))
                )
            ).all()
        return {vc: int(t) for vc, t in timeouts.items() if t}, [tuple(r) for r in rows]  # type: ignore[misc]

    async def tick(self) -> None:
        self.timeouts, servers = await to_thread.run_sync(self._servers)
        now = time.time()
        for user, vc, ref in servers:
            name = ref.split("/", 1)[1] if "/" in ref else ""
            try:
                model = await self.ctx.hub.user(user, fresh=True) or {}
                idle = idle_for((model.get("servers") or {}).get(name), now)
                if idle is None or idle <= self.timeouts[vc]:
                    continue
                await stop_server(self.ctx, ref)
            except (HubError, httpx.HTTPError) as e:
                log.warning("per-VC idle culler: %s not looked at: %s", ref, e)
                continue
            reason = f"idle for {round(idle)} s (VC {vc}: {self.timeouts[vc]} s)"
            log.warning("per-VC idle culler: stopped %s: %s", ref, reason)
            self.stopped = [*self.stopped[-99:], {"ref": ref, "vc": vc, "at": now, "reason": reason}]
