"""``AlertsManager``: writes the configs from the database, runs and reloads Prometheus and
Alertmanager, and asks Alertmanager about silences. One per app (``app.state.alerts``)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from anyio import to_thread
from sqlalchemy import select

from ..core.confinement import private_dir
from ..core.db import Database
from ..core.errors import Refusal
from ..core.settings import Settings
from . import config, credentials, files, processes
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
RELOAD_WITHIN = 10.0  # seconds a daemon has to reload after SIGHUP
# the gauges each daemon sets when it has (re)loaded its configuration
RELOAD_METRICS = {"prometheus": "prometheus_config_last_reload", "alertmanager": "alertmanager_config_last_reload"}


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
        self.logins = credentials.logins(settings.data_dir)
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
        return config.Targets(
            platform=self.platform,
            metrics_path=f"{self.prefix}metrics",
            prometheus=self.urls["prometheus"].removeprefix("http://"),
            alertmanager=self.urls["alertmanager"].removeprefix("http://"),
            nodes=tuple(self.cfg.node_targets),
            node=self.urls["node"].removeprefix("http://"),
        )

    def web_config(self, name: str) -> Path:
        """The daemon's ``--web.config.file`` (its login's bcrypt hash)."""
        return self.dir / f"{credentials.FILE_NAMES[name]}-web.yml"

    def auth(self, name: str) -> httpx.BasicAuth:
        """The daemon's login, for an httpx client of it."""
        login = self.logins[name]
        return httpx.BasicAuth(login.user, credentials.ensure(login))

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
        private_dir(self.settings.data_dir.absolute() / "secrets", 0o700)
        private_dir(credentials.secret_dir(self.settings.data_dir), 0o700)
        for name in credentials.DAEMONS:
            credentials.write_web_config(self.web_config(name), self.logins[name])
        logins = config.Logins(**{name: self.logins[name].basic_auth() for name in credentials.DAEMONS})
        with self.db.session() as s:
            rules = [as_rule(r) for r in s.scalars(select(AlertRule))]
            routes = [as_route(r) for r in s.scalars(select(AlertRoute))]
        c = self.cfg
        changed = files.write_yaml(
            Path(self.paths.rules), config.rule_file(rules, c.evaluation_interval, c.scrape_interval)
        )
        changed |= files.write_yaml(
            self.dir / "prometheus.yml",
            config.prometheus_config(self.targets(), self.paths, c.scrape_interval, c.evaluation_interval, logins),
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
        """Have Prometheus and Alertmanager read their files again: SIGHUP to the process the service
        started (their lifecycle API is off), then their reload gauges say whether they took it."""
        for name in ("prometheus", "alertmanager"):
            child = self.children.get(name)
            if child is None or child.proc is None or not child.running or not child.holds_port():
                continue
            before = await self._reloaded(child)
            child.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + RELOAD_WITHIN
            while True:
                await asyncio.sleep(0.02)
                after = await self._reloaded(child)
                if after is not None and before is not None and after[1] > before[1]:
                    break
                failed = after is not None and after[0] == 0
                if failed and (before is None or before[0] == 1 or time.monotonic() > deadline):
                    raise Refusal(422, f"{name} refused the new configuration (its log: {child.log_path})")
                if time.monotonic() > deadline:
                    log.warning("%s did not say it reloaded within %g s", name, RELOAD_WITHIN)
                    break

    async def _reloaded(self, child: Child) -> tuple[float, float] | None:
        """``(successful, timestamp)`` of the daemon's last configuration reload, from its /metrics."""
        prefix = RELOAD_METRICS[child.name]
        try:
            async with httpx.AsyncClient(timeout=5, auth=self.auth(child.name)) as client:
                text = (await client.get(child.url + "/metrics")).text
        except httpx.HTTPError as e:
            log.warning("reading %s's metrics: %s", child.name, e)
            return None
        ok = re.search(rf"^{prefix}_successful(?:{{[^}}]*}})? (\S+)$", text, re.M)
        at = re.search(rf"^{prefix}_success_timestamp_seconds(?:{{[^}}]*}})? (\S+)$", text, re.M)
        return (float(ok.group(1)), float(at.group(1))) if ok and at else None

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
                f"--web.config.file={self.web_config('prometheus')}",  # no --web.enable-lifecycle: SIGHUP reloads
            ]
            out["prometheus"] = Child(
                "prometheus", argv, self.urls["prometheus"], logs / "prometheus.log", auth=self._pair("prometheus")
            )
        am = processes.find(c.alertmanager_bin)
        if am:
            argv = [
                am,
                f"--config.file={d / 'alertmanager.yml'}",
                f"--storage.path={d / 'alertmanager-data'}",
                f"--web.listen-address={c.ip}:{c.alertmanager_port}",
                f"--web.config.file={self.web_config('alertmanager')}",
                "--cluster.listen-address=",
            ]
            out["alertmanager"] = Child(
                "alertmanager",
                argv,
                self.urls["alertmanager"],
                logs / "alertmanager.log",
                auth=self._pair("alertmanager"),
            )
        node = processes.find(c.node_exporter_bin)
        if node and c.node_exporter_port:
            argv = [
                node,
                f"--web.listen-address={c.ip}:{c.node_exporter_port}",
                f"--web.config.file={self.web_config('node')}",
            ]
            out["node"] = Child(
                "node", argv, self.urls["node"], logs / "node-exporter.log", ready_path="/", auth=self._pair("node")
            )
        return out

    def _pair(self, name: str) -> tuple[str, str]:
        login = self.logins[name]
        return login.user, credentials.ensure(login)

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
            proc = child.proc if child is not None else None
            if child is not None and proc is not None and proc.returncode is not None and child.state != "error":
                child.state = "exited"  # (error: its port is held, which says more)
                child.detail = child.detail or f"exited with status {proc.returncode} (log: {child.log_path})"
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
        errors = [
            out[k]["detail"] for k in ("prometheus", "alertmanager", "node_exporter") if out[k]["state"] == "error"
        ]
        if errors:  # a port held by another process: alerting does not work until it is freed
            message = " ".join(errors)
        elif not out["prometheus"]["installed"] or not out["alertmanager"]["installed"]:
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
        if not child.holds_port():  # our Alertmanager ended and another process took its port
            child.state, child.detail = "error", processes.port_held(child)
            raise Refusal(409, child.detail)
        return child.url

    async def _am(self, method: str, path: str, **kw: Any) -> httpx.Response:
        url = self._alertmanager()
        try:
            async with httpx.AsyncClient(timeout=10, auth=self.auth("alertmanager")) as client:
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
