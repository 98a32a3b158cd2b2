"""The service's watcher of its own node: health probes, usage samples and the usage history.

One task per service (started by ``core.app``'s lifespan) wakes every ``ops.probe_interval``
seconds: it probes the platform's services (the hub's API, the proxy, the ``ops.probes`` URLs,
and the in-process checks the app passes: job manager, SSH gateway), samples this machine's
use (per-device on the local backend, ops/usage.py), and appends one sample of VC usage and queue lengths to a bounded history. The dashboard
route only reads what the last tick left, so it never waits on a probe.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from anyio import to_thread
from sqlalchemy import func, select

from ..alerts.nvml import NVML
from ..core.db import Database
from ..core.periodic import Periodic
from ..jobs.models import Job
from ..vcs.quantities import Resources
from ..vcs.views import usage
from .nodes import NodeRegistry, local_usage
from .schemas import OpsSettings
from .usage import freshest, read_devices

log = logging.getLogger("yitong_services.ops")
Check = Callable[[], tuple[bool, str]]


def jobs_by_state(db: Database) -> dict[str, int]:
    with db.session() as s:
        return {state: n for state, n in s.execute(select(Job.state, func.count()).group_by(Job.state))}


def queued_by_vc(db: Database) -> dict[str, int]:
    with db.session() as s:
        rows = s.execute(select(Job.vc, func.count()).where(Job.state == "queued").group_by(Job.vc))
        return {vc: n for vc, n in rows}


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every probe: building one costs ~10 ms on the event loop."""
    return ssl.create_default_context()


class Monitor(Periodic):
    what = "operations monitor"

    def __init__(
        self,
        db: Database,
        ops: OpsSettings,
        backend: str,
        inventory: Resources,
        *,
        probes: dict[str, str] | None = None,
        checks: dict[str, Check] | None = None,
    ) -> None:
        self.db = db
        self.ops = ops
        self.backend = backend
        self.inventory = inventory
        self.probes = dict(probes or {}) | dict(ops.probes)
        self.checks = dict(checks or {})
        self.registry = NodeRegistry(ops.max_nodes)
        self.hostname = socket.gethostname()
        self.services: list[dict[str, Any]] = []
        self.used: dict[str, float | int | None] = {}
        self.history: deque[dict[str, Any]] = deque(maxlen=ops.history)
        self._views: dict[Any, dict[str, Any]] = {}  # the dashboard's rows of unchanged reports
        self.ticks = 0
        self.nvml = NVML()
        # this machine's per-device use (ops/usage.py), as a node report's devices part
        self.devices: dict[str, Any] = {"devices": None, "devices_note": "not sampled yet", "reported": None}

    @property
    def interval(self) -> float:
        return self.ops.probe_interval

    async def tick(self) -> None:
        self.services = await self.probe_all()
        self.used = await to_thread.run_sync(local_usage, self.inventory)
        if self.backend == "local":
            devices, note = await to_thread.run_sync(read_devices, self.nvml)
            self.devices = {"devices": devices, "devices_note": note, "reported": time.time()}
        self.history.append(await to_thread.run_sync(self.sample))
        self.ticks += 1

    async def probe_all(self) -> list[dict[str, Any]]:
        out = [{"name": "platform service", "ok": True, "detail": ""}]
        for name, check in self.checks.items():
            ok, detail = check()
            out.append({"name": name, "ok": ok, "detail": detail})
        async with httpx.AsyncClient(timeout=self.ops.probe_timeout, verify=_tls()) as client:
            results = await asyncio.gather(*(self._probe(client, url) for url in self.probes.values()))
        out.extend({"name": n, "ok": ok, "detail": d} for n, (ok, d) in zip(self.probes, results, strict=True))
        return out

    @staticmethod
    async def _probe(client: httpx.AsyncClient, url: str) -> tuple[bool, str]:
        try:
            r = await client.get(url)
        except httpx.HTTPError as e:
            return False, f"{type(e).__name__} at {url}"
        if r.status_code >= 400:
            return False, f"HTTP {r.status_code} at {url}"
        return True, ""

    def sample(self) -> dict[str, Any]:
        """One point of the 'over time' charts: per VC, what it uses and how many jobs wait."""
        with self.db.session() as s:
            vcs = usage(s, self.backend, self.inventory)["vcs"]
        queued = queued_by_vc(self.db)
        return {
            "at": round(time.time(), 1),
            "vcs": {v["name"]: {"used": v["used"], "queued": queued.get(v["name"], 0)} for v in vcs},
        }

    def view_cache(self) -> dict[Any, dict[str, Any]]:
        """The dashboard builder's cache of node rows, emptied when it outgrows the registry."""
        if len(self._views) > 2 * self.ops.max_nodes:
            self._views = {}
        return self._views

    def devices_of(self, node: str) -> Mapping[str, Any] | None:
        """The latest per-device report of ``node``: its agent's, or this machine's own sample."""
        own = self.devices if node == self.hostname and self.devices["reported"] else None
        return freshest([self.registry.get(node), own])

    def local_node(self, allocated: Resources) -> dict[str, Any]:
        """This machine: on the local backend the node jobs and servers run on (every allocation
        is here); elsewhere the host of the hub and the platform service (no capacity of its own)."""
        local = self.backend == "local"
        return {
            "name": self.hostname,
            "source": "local" if local else "platform",
            "reported": None,
            "allocatable": dict(self.inventory) if local else {},
            "allocated": dict(allocated) if local else {},
            "used": dict(self.used) if local else {},
            "services": list(self.services) or [{"name": "monitor", "ok": False, "detail": "no probe has run yet"}],
        }
