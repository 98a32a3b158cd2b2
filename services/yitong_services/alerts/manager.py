"""``AlertsManager``: writes the configs from the database, runs and reloads Prometheus and
Alertmanager, and asks Alertmanager about silences. One per app (``app.state.alerts``)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from anyio import to_thread
from sqlalchemy import select

from ..core.db import Database
from ..core.errors import Refusal
from ..core.settings import Settings
from . import config, files, processes
from .models import AlertRoute, AlertRule
from .nvml import NVML
from .processes import PACKAGES, Child
from .records import as_route, as_rule

INSTALL = (
    "Prometheus is not installed: install the Debian packages prometheus, prometheus-alertmanager and"
    " prometheus-node-exporter (apt-get install prometheus prometheus-alertmanager prometheus-node-exporter),"
    " then restart the platform service; rules are kept and take effect then"
)
NOT_RUNNING = "Alertmanager is not running (GET /alerts/status says why): silences need it"


def _loopback(ip: str) -> str:
    return "127.0.0.1" if ip in ("", "0.0.0.0", "::") else ip


class AlertsManager:
    def __init__(self, settings: Settings, db: Database, token: str, prefix: str, nvml: NVML | None = None) -> None:
        self.settings = settings
        self.cfg = settings.alerts
        self.db = db
        self.token = token
        self.prefix = prefix
        self.nvml = nvml or NVML()
        self.dir = (settings.data_dir / "alerts").absolute()
        self.paths = config.Paths(
            rules=str(self.dir / "rules.yml"),
            scrape_token=str(self.dir / "scrape-token"),
            webhook_secret=str(self.dir / "webhook-secret"),
        )
        ip = self.cfg.ip
        self.urls = {
            "prometheus": f"http://{ip}:{self.cfg.prometheus_port}",
            "alertmanager": f"http://{ip}:{self.cfg.alertmanager_port}",
            "node": f"http://{ip}:{self.cfg.node_exporter_port}" if self.cfg.node_exporter_port else "",
        }
        self.children: dict[str, Child] = {}
        self._secret = ""
        self._task: asyncio.Task | None = None
        self._watchers: list[asyncio.Task] = []
        self._stopping = asyncio.Event()
        self._lock = asyncio.Lock()

    # -- files -------------------------------------------------------------------------------

    @property
    def platform(self) -> str:
        return f"{_loopback(self.settings.service.ip)}:{self.settings.service.port}"

    @property
    def webhook_url(self) -> str:
        return f"http://{self.platform}{self.prefix}api/v1/alerts/webhook"

    def targets(self) -> config.Targets:
        nodes = [self.urls["node"].removeprefix("http://")] if self.urls["node"] else []
        return config.Targets(
            platform=self.platform,
            metrics_path=f"{self.prefix}metrics",
            prometheus=self.urls["prometheus"].removeprefix("http://"),
            alertmanager=self.urls["alertmanager"].removeprefix("http://"),
            nodes=tuple(nodes + list(self.cfg.node_targets)),
        )

    def secret(self) -> str:
        if not self._secret:
            self._secret = files.secret(Path(self.paths.webhook_secret))
        return self._secret

    def webhook_refusal(self, authorization: str) -> str | None:
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(credentials.strip().encode(), self.secret().encode()):
            return "the alert webhook takes Alertmanager's per-install secret (<data_dir>/alerts/webhook-secret)"
        return None

    def write(self) -> bool:
        """Write prometheus.yml, rules.yml and alertmanager.yml from the database; True if any changed."""
        self.secret()
        files.write_atomic(Path(self.paths.scrape_token), self.token or "-")
        with self.db.session() as s:
            rules = [as_rule(r) for r in s.scalars(select(AlertRule))]
            routes = [as_route(r) for r in s.scalars(select(AlertRoute))]
        c = self.cfg
        changed = files.write_yaml(
            Path(self.paths.rules), config.rule_file(rules, c.evaluation_interval, c.scrape_interval)
        )
        changed |= files.write_yaml(
            self.dir / "prometheus.yml",
            config.prometheus_config(self.targets(), self.paths, c.scrape_interval, c.evaluation_interval),
        )
        am = config.alertmanager_config(
            routes,
            self.webhook_url,
            self.paths,
            c.smtp.model_dump(),
            group_wait=c.group_wait,
            group_interval=c.group_interval,
            repeat_interval=c.repeat_interval,
        )
        changed |= files.write_yaml(self.dir / "alertmanager.yml", am)
        return changed

    async def apply(self) -> None:
        """After a change of rules or routes: rewrite the files and have both processes reload."""
        async with self._lock:
            if await to_thread.run_sync(self.write):
                await self.reload()

    async def reload(self) -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            for name in ("prometheus", "alertmanager"):
                child = self.children.get(name)
                if child is None or not child.running:
                    continue
                try:
                    r = await client.post(child.url + "/-/reload")
                    if r.status_code != 200:
                        raise Refusal(422, f"{name} refused the new configuration: {r.text.strip()[:500]}")
                except httpx.HTTPError as e:
                    log.warning("reloading %s: %s", name, e)

    # -- processes ---------------------------------------------------------------------------

    def _children(self) -> dict[str, Child]:
        c, d, logs = self.cfg, self.dir, self.settings.data_dir.absolute() / "logs"
        out: dict[str, Child] = {}
        prom = processes.find(c.prometheus_bin)
        if prom:
            argv = [
                prom,
                f"--config.file={d / 'prometheus.yml'}",
                f"--storage.tsdb.path={d / 'prometheus-data'}",
                f"--storage.tsdb.retention.time={c.retention}",
                f"--web.listen-address={c.ip}:{c.prometheus_port}",
                "--web.enable-lifecycle",
            ]
            out["prometheus"] = Child("prometheus", argv, self.urls["prometheus"], logs / "prometheus.log")
        am = processes.find(c.alertmanager_bin)
        if am:
            argv = [
                am,
                f"--config.file={d / 'alertmanager.yml'}",
                f"--storage.path={d / 'alertmanager-data'}",
                f"--web.listen-address={c.ip}:{c.alertmanager_port}",
                "--cluster.listen-address=",
            ]
            out["alertmanager"] = Child("alertmanager", argv, self.urls["alertmanager"], logs / "alertmanager.log")
        node = processes.find(c.node_exporter_bin)
        if node and c.node_exporter_port:
            argv = [node, f"--web.listen-address={c.ip}:{c.node_exporter_port}"]
            out["node"] = Child("node", argv, self.urls["node"], logs / "node-exporter.log", ready_path="/")
        return out

    async def start(self) -> None:
        """Write the files; when ``alerts.run``, start the processes in the background."""
        await to_thread.run_sync(self.write)
        if not self.cfg.run:
            return
        self.children = self._children()

        async def run_all() -> None:
            # the node exporter and Alertmanager first: Prometheus scrapes and alerts to them
            for name in ("node", "alertmanager", "prometheus"):
                if name in self.children:
                    await processes.start(self.children[name])
            async with self._lock:  # a rule or route changed while they started
                await to_thread.run_sync(self.write)
                await self.reload()
            for child in self.children.values():  # restarted when they exit, until the service stops
                self._watchers.append(asyncio.create_task(processes.supervise(child, self._stopping)))

        self._task = asyncio.create_task(run_all())

    async def wait_started(self) -> None:
        if self._task is not None:
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        self._stopping.set()
        for watcher in self._watchers:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for name in ("prometheus", "alertmanager", "node"):
            if name in self.children:
                await processes.stop(self.children[name])

    def status(self) -> dict[str, Any]:
        def component(name: str, executable: str) -> dict[str, Any]:
            installed = processes.find(executable) is not None
            child = self.children.get(name)
            if child is not None and child.proc is not None and child.proc.returncode is not None:
                child.state = "exited"
                child.detail = child.detail or f"exited with status {child.proc.returncode} (log: {child.log_path})"
            if not installed:
                state, detail = "missing", f"install the Debian package {PACKAGES[name]}"
            elif name == "node" and not self.cfg.node_exporter_port:
                state, detail = "off", "alerts.node_exporter_port is 0"
            elif not self.cfg.run:
                state, detail = "off", "alerts.run is false: the service does not start it"
            elif child is None:
                state, detail = "stopped", ""
            else:
                state, detail = child.state, child.detail
            return {"installed": installed, "state": state, "url": self.urls[name] or None, "detail": detail}

        c = self.cfg
        out: dict[str, Any] = {
            "prometheus": component("prometheus", c.prometheus_bin),
            "alertmanager": component("alertmanager", c.alertmanager_bin),
            "node_exporter": component("node", c.node_exporter_bin),
            "email": bool(c.smtp.host),
            "accelerators": self.nvml.available,
        }
        message = None
        if not out["prometheus"]["installed"] or not out["alertmanager"]["installed"]:
            message = INSTALL
        elif not c.smtp.host:
            message = "email is off: set alerts.smtp.host (and port, sender) in the settings file"
        out["message"] = message
        return out

    # -- silences (Alertmanager's API v2) ----------------------------------------------------

    def _alertmanager(self) -> str:
        child = self.children.get("alertmanager")
        if child is None or not child.running:
            if processes.find(self.cfg.alertmanager_bin) is None:
                raise Refusal(409, INSTALL)
            raise Refusal(409, NOT_RUNNING)
        return child.url

    async def _am(self, method: str, path: str, **kw: Any) -> httpx.Response:
        url = self._alertmanager()
        try:
            async with httpx.AsyncClient(timeout=10) as client:
                return await client.request(method, url + "/api/v2" + path, **kw)
        except httpx.HTTPError as e:
            raise Refusal(409, f"Alertmanager did not answer: {e}") from None

    async def silences(self) -> list[dict[str, Any]]:
        r = await self._am("GET", "/silences")
        return [silence_dict(x) for x in r.json()] if r.status_code == 200 else []

    async def silence(self, matchers: dict[str, str], seconds: int, comment: str, by: str) -> dict[str, Any]:
        now = datetime.now(UTC)
        body = {
            "matchers": [{"name": k, "value": v, "isRegex": False, "isEqual": True} for k, v in matchers.items()],
            "startsAt": now.isoformat(),
            "endsAt": (now + timedelta(seconds=seconds)).isoformat(),
            "createdBy": by,
            "comment": comment,
        }
        r = await self._am("POST", "/silences", json=body)
        if r.status_code != 200:
            raise Refusal(422, f"Alertmanager refused the silence: {r.text.strip()[:300]}")
        got = await self._am("GET", f"/silence/{r.json()['silenceID']}")
        return silence_dict(got.json())

    async def expire(self, silence_id: str) -> None:
        r = await self._am("DELETE", f"/silence/{silence_id}")
        if r.status_code != 200:
            raise Refusal(404, f"there is no silence {silence_id}")


def silence_dict(x: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": x.get("id", ""),
        "matchers": {m["name"]: m["value"] for m in x.get("matchers", [])},
        "starts_at": x.get("startsAt", ""),
        "ends_at": x.get("endsAt", ""),
        "created_by": x.get("createdBy", ""),
        "comment": x.get("comment", ""),
        "state": (x.get("status") or {}).get("state", ""),
    }


log = logging.getLogger(__name__)
