"""Accelerator reclaim: a notebook server that holds an accelerator, whose kernels and
terminals are idle and whose accelerator shows no use, is warned, then stopped (its
allocation, hence the accelerator, goes back to the VC). A busy kernel is never touched.

:func:`decide` is the policy (pure, tested as a table); :class:`Reclaimer` gathers what it
needs each ``reclaim.interval``: the servers holding devices (their allocations), each server's
kernels and terminals (its own API, through the proxy, with a short-lived token of the owner
limited to that server, as the SSH gateway does), and its accelerator's use: the device indices
the platform placed it on (vcs/placement.py) matched to its node's latest per-device report
(NVML, ops/usage.py), or why that is not measured. Decisions are kept in memory (the console's
dashboard and ``GET /reclaim`` show them; ``GET /reclaim/warnings`` the caller's pending
warnings, which the JupyterLab extension shows as a notification).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx
from anyio import to_thread
from sqlalchemy import select

from ..core.context import Context
from ..core.hub import HubError
from ..core.periodic import Periodic
from ..vcs.models import Allocation
from .schemas import ReclaimSettings
from .usage import measure

log = logging.getLogger("yitong_services.ops.reclaim")
BUSY_STATES = {"busy", "starting"}


def _ts(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def decide(seen: Mapping[str, Any], now: float, policy: ReclaimSettings, warned_at: float | None) -> tuple[str, str]:
    """``("keep" | "warn" | "stop", reason)`` for one server.

    ``seen``: ``{kernels: [{execution_state, last_activity}], terminals: [{last_activity}],
    last_activity: iso | None, accelerator_busy: fraction | None, unmeasured: why}`` (None: not
    measured, ``unmeasured`` saying why).
    """
    kernels = seen.get("kernels") or []
    if any(k.get("execution_state") in BUSY_STATES for k in kernels):
        return "keep", "a kernel is busy"
    busy = seen.get("accelerator_busy")
    if busy is not None and busy > policy.busy_threshold:
        return "keep", f"its accelerator is in use ({round(busy * 100)}%)"
    if busy is None and policy.require_measurement:
        why = seen.get("unmeasured") or "no NVML"
        return "keep", f"its accelerator's use is not measured ({why}): not reclaimed on idle kernels alone"
    times = [_ts(k.get("last_activity")) for k in kernels] + [
        _ts(t.get("last_activity")) for t in seen.get("terminals") or []
    ]
    times.append(_ts(seen.get("last_activity")))
    known = [t for t in times if t is not None]
    idle = now - max(known) if known else None
    if idle is not None and idle < policy.idle:
        return "keep", f"active {round(idle)} s ago"
    if warned_at is None:
        return "warn", f"idle with an accelerator: stopped in {round(policy.grace)} s unless used"
    if now - warned_at < policy.grace:
        return "keep", f"warned; stopped in {round(policy.grace - (now - warned_at))} s unless used"
    return "stop", f"idle with an accelerator for {round(idle or 0)} s after a warning"


class Reclaimer(Periodic):
    what = "accelerator reclaim"

    def __init__(
        self,
        ctx: Context,
        policy: ReclaimSettings,
        hub_url: str | None,
        reports: Callable[[str], Mapping[str, Any] | None] = lambda node: None,
        stale: float = 120.0,
    ) -> None:
        self.ctx = ctx
        self.policy = policy
        self.hub_url = (hub_url or "").rstrip("/")
        self.reports = reports  # node -> its latest per-device report (Monitor.devices_of)
        self.stale = stale  # seconds after which a node's report no longer counts
        self.warned: dict[str, float] = {}
        self.decisions: dict[str, dict[str, Any]] = {}  # ref -> the latest decision
        self.stopped: list[dict[str, Any]] = []  # the latest stops, newest last

    @property
    def interval(self) -> float:
        return self.policy.interval

    async def start(self) -> None:
        if self.policy.enabled and self.ctx.hub.token and self.hub_url:
            await super().start()

    def _holders(self) -> list[dict[str, Any]]:
        with self.ctx.db.session() as s:
            rows = s.execute(
                select(Allocation.user, Allocation.vc, Allocation.ref, Allocation.resources, Allocation.devices).where(
                    Allocation.kind == "server"
                )
            ).all()
        return [
            {"user": u, "vc": vc, "ref": ref, "devices": {r: n for r, n in res.items() if "/" in r}, "placed": placed}
            for u, vc, ref, res, placed in rows
            if any("/" in r and n for r, n in res.items())
        ]

    async def tick(self) -> None:
        now = time.time()
        holders = await to_thread.run_sync(self._holders)
        live = {h["ref"] for h in holders}
        self.warned = {r: t for r, t in self.warned.items() if r in live}
        self.decisions = {r: d for r, d in self.decisions.items() if r in live}
        for holder in holders:
            try:
                seen = await self.look(holder)
            except (HubError, httpx.HTTPError) as e:
                self._note(holder, "keep", f"not looked at: {e}", now)
                continue
            if seen is None:
                continue
            action, reason = decide(seen, now, self.policy, self.warned.get(holder["ref"]))
            if action == "keep" and not reason.startswith("warned;"):
                self.warned.pop(holder["ref"], None)  # used again (or not measured): a later idle spell warns anew
            if action == "warn":
                self.warned[holder["ref"]] = now
                log.warning("accelerator reclaim: warned %s (VC %s): %s", holder["ref"], holder["vc"], reason)
            elif action == "stop":
                await self.stop_server(holder)
                log.warning("accelerator reclaim: stopped %s (VC %s): %s", holder["ref"], holder["vc"], reason)
                self.stopped = [
                    *self.stopped[-99:],
                    {"ref": holder["ref"], "vc": holder["vc"], "at": now, "reason": reason},
                ]
                self.warned.pop(holder["ref"], None)
            self._note(holder, action, reason, now, seen.get("measured", ""))

    def _note(self, holder: dict[str, Any], action: str, reason: str, now: float, measured: str = "") -> None:
        self.decisions[holder["ref"]] = {
            "ref": holder["ref"],
            "user": holder["user"],
            "vc": holder["vc"],
            "devices": holder["devices"],
            "action": action,
            "reason": reason,
            "measured": measured,  # what the accelerator's use was read as, or why it was not
            "at": now,
            "warned_at": self.warned.get(holder["ref"]),
            "stop_at": self.warned[holder["ref"]] + self.policy.grace if holder["ref"] in self.warned else None,
        }

    def warnings(self, user: str) -> list[dict[str, Any]]:
        """``user``'s servers that are warned and not yet stopped (their latest decisions)."""
        return [
            d
            for d in self.decisions.values()
            if d["user"] == user and d.get("warned_at") is not None and d["action"] in ("warn", "keep")
        ]

    async def look(self, holder: dict[str, Any]) -> dict[str, Any] | None:
        """The server's kernels, terminals and activity; None when it is not running."""
        user, name = holder["ref"].split("/", 1)
        model = await self.ctx.hub.user(user, fresh=True) or {}
        server = (model.get("servers") or {}).get(name)
        if not server or not server.get("ready"):
            return None
        token, token_id = await self.ctx.hub.create_token(
            user, [f"access:servers!server={holder['ref']}"], 300, f"yitong accelerator reclaim of {holder['ref']}"
        )
        try:
            async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"token {token}"}) as client:
                base = self.hub_url + server["url"]
                kernels = (await client.get(base + "api/kernels")).raise_for_status().json()
                terminals = (await client.get(base + "api/terminals")).raise_for_status().json()
        finally:
            with contextlib.suppress(HubError):
                await self.ctx.hub.revoke_token(user, token_id)
        placed = holder.get("placed")
        report = self.reports(placed["node"]) if placed and placed.get("node") else None
        busy, detail = measure(placed, report, time.time(), self.stale)
        return {
            "kernels": kernels,
            "terminals": terminals,
            "last_activity": server.get("last_activity"),
            "accelerator_busy": busy,
            "unmeasured": detail if busy is None else "",
            "measured": detail,
        }

    async def stop_server(self, holder: dict[str, Any]) -> None:
        await stop_server(self.ctx, holder["ref"])


async def stop_server(ctx: Context, ref: str) -> None:
    """Stop ``user/name`` through the hub (which releases its allocation); gone already is fine."""
    user, name = ref.split("/", 1)
    path = f"/users/{quote(user, safe='')}/" + (f"servers/{quote(name, safe='')}" if name else "server")
    r = await ctx.hub.client.delete(ctx.hub.api_url + path, headers={"Authorization": f"token {ctx.hub.token}"})
    if r.status_code not in (202, 204, 404):
        raise HubError(f"JupyterHub answered {r.status_code} stopping {ref}: {r.text[:300]}")
