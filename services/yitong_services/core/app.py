"""``create_app(settings)`` and the ``yitong-service`` command (a JupyterHub-managed service)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from urllib.parse import urlparse

from anyio import to_thread
from fastapi import FastAPI
from fastapi.responses import Response

from ..alerts.disks import DiskCollector
from ..alerts.manager import AlertsManager
from ..alerts.metrics import OperationsCollector
from ..datasets.storage import Storage
from ..hpo.driver import Driver
from ..jobs.backend import make_backend
from ..jobs.events import JobFeed
from ..jobs.manager import JobManager
from ..jobs.tokens import JobTokens
from ..models import mlserver_env
from ..models.driver import EndpointDriver
from ..models.rollout import Router
from ..ops.culler import VCCuller
from ..ops.monitor import Monitor
from ..ops.reclaim import Reclaimer
from ..ops.storage_walk import StorageWalk
from ..routes import ROUTERS
from ..routes.admin_page import router as admin_router
from ..routes.common import Caller, require_admin
from ..routes.console import router as console_router
from ..routes.endpoints_v2 import V2FastPath
from ..ssh.gateway import Gateway
from ..vcs.inventory import inventory as backend_inventory
from ..vcs.seed import seed
from ..vcs.stale_servers import reconcile_forever
from . import errors, openapi
from .context import Context
from .db import Database
from .hub import HubClient
from .limits import BodyLimit, body_limit
from .metrics import Metrics
from .oauth import cookie_secret, hub_oauth
from .oauth import router as oauth_router
from .settings import Settings, SettingsError, load_settings

log = logging.getLogger("yitong_services")


def create_app(
    settings: Settings,
    *,
    hub_api_url: str | None = None,
    hub_api_token: str | None = None,
    prefix: str | None = None,
    service_name: str | None = None,
    reconcile_interval: float | None = None,
) -> FastAPI:
    """Migrate and seed the database, then build the app (routes under ``prefix``).

    Hub settings default to the environment JupyterHub gives a managed service:
    ``JUPYTERHUB_API_URL``, ``JUPYTERHUB_API_TOKEN``, ``JUPYTERHUB_SERVICE_PREFIX``,
    ``JUPYTERHUB_SERVICE_NAME``, ``JUPYTERHUB_CLIENT_ID``, ``JUPYTERHUB_OAUTH_ACCESS_SCOPES``.
    ``reconcile_interval`` None: from settings; negative: no reconciler at all.
    """
    prefix = prefix or os.environ.get("JUPYTERHUB_SERVICE_PREFIX") or "/services/yitong/"
    prefix = "/" + prefix.strip("/") + "/"
    name = service_name or os.environ.get("JUPYTERHUB_SERVICE_NAME") or "yitong"
    mlserver_env.configure(settings)  # models.mlserver, where a deploy builds it on first need
    db = Database(settings.database_url)
    db.upgrade()
    seed(db, settings)
    hub = HubClient(
        hub_api_url or os.environ.get("JUPYTERHUB_API_URL", "http://127.0.0.1:8081/hub/api"),
        hub_api_token or os.environ.get("JUPYTERHUB_API_TOKEN", ""),
        ttl=settings.service.hub_cache_seconds,
    )
    scopes = os.environ.get("JUPYTERHUB_OAUTH_ACCESS_SCOPES")
    ctx = Context(
        settings=settings,
        db=db,
        hub=hub,
        inventory=backend_inventory(settings),
        prefix=prefix,
        service_name=name,
        oauth_client_id=os.environ.get("JUPYTERHUB_CLIENT_ID") or f"service-{name}",
        cookie_secret=cookie_secret(settings.data_dir),
        access_scopes=frozenset(json.loads(scopes) if scopes else [f"access:services!service={name}"]),
        storage=Storage(settings, db),
    )
    interval = settings.service.reconcile_interval if reconcile_interval is None else reconcile_interval
    jobs = JobManager(
        db,
        ctx.storage,
        make_backend(settings.backend, settings.data_dir, settings),
        ctx.inventory,
        settings.data_dir,
        settings.jobs.api_url or f"http://{settings.service.ip}:{settings.service.port}{prefix}api/v1",
        settings.jobs.poll_interval,
        tokens=JobTokens(
            hub,
            settings.data_dir,
            name,
            settings.jobs.token_lifetime,
            settings.jobs.token_grace,
            settings.jobs.token_spare_age,
        )
        if hub.token
        else None,
    )
    hpo = Driver(db, jobs, ctx.inventory, settings.jobs.poll_interval)
    endpoint_router = Router()
    endpoints = EndpointDriver(db, jobs, endpoint_router, min(settings.jobs.poll_interval, 0.5))

    gateway = Gateway(ctx, jobs.backend)
    alerts = AlertsManager(settings, db, hub.token, prefix)
    feed = JobFeed(db)
    monitor = Monitor(
        db,
        settings.ops,
        settings.backend,
        ctx.inventory,
        probes=service_probes(hub.api_url, os.environ.get("YITONG_HUB_URL")) if hub.token else {},
        checks=service_checks(settings, jobs, gateway),
    )
    reclaimer = Reclaimer(
        ctx, settings.reclaim, os.environ.get("YITONG_HUB_URL"), monitor.devices_of, settings.ops.node_stale
    )

    culler = VCCuller(ctx, settings.culling)
    storage_walk = StorageWalk(ctx)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Worker threads for blocking work: the plain ``def`` routes, ``run_in_threadpool`` in the
        # async ones, sync response streams and the job manager's ``to_thread`` calls share this
        # one limit (``service.threads``, 40 = anyio's default, set here so that it is a decision):
        # a request past it waits for a thread; the event loop is never blocked.
        to_thread.current_default_thread_limiter().total_tokens = settings.service.threads
        task = None
        if interval >= 0 and hub.token:
            task = asyncio.create_task(reconcile_forever(ctx, interval))
        if settings.jobs.enabled:
            await jobs.start()
            await hpo.start()
            await endpoints.start()
        if settings.ssh.port and hub.token:
            await gateway.start()
        await alerts.start()
        await monitor.start()
        await reclaimer.start()
        await culler.start()
        await storage_walk.start()
        try:
            yield
        finally:
            await storage_walk.stop()
            await culler.stop()
            await reclaimer.stop()
            await monitor.stop()
            await alerts.stop()
            await endpoints.stop()
            await hpo.stop()
            await gateway.stop()
            await feed.close()
            await jobs.stop()
            if task:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await hub.close()
            if getattr(_app.state, "loopback", None) is not None:
                _app.state.loopback.close()  # the pass-through's connections to replicas
            db.dispose()

    app = FastAPI(
        title="Yitong platform service",
        version="1",
        description='VCs, quotas, profiles, allocations, datasets and jobs. Errors are `{"detail": "..."}`.',
        openapi_url=f"{prefix}openapi.json",
        docs_url=f"{prefix}docs",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.yitong = ctx
    app.state.jobs = jobs
    app.state.ssh = gateway
    app.state.job_feed = feed
    app.state.hpo = hpo
    app.state.endpoints = endpoints
    app.state.endpoint_router = endpoint_router
    app.state.monitor = monitor
    app.state.reclaimer = reclaimer
    app.state.culler = culler
    app.state.storage_walk = storage_walk
    app.state.alerts = alerts
    app.state.oauth = hub_oauth(ctx) if hub.token else None
    errors.install(app)
    openapi.install(app, f"{prefix}api/v1")
    # the endpoints' /v2 pass-through, the hot path of serving, skips the route table
    app.add_middleware(V2FastPath, api_prefix=f"{prefix}api/v1")
    app.add_middleware(BodyLimit, limit_for=lambda path: body_limit(path, settings.service.limits))
    operations = OperationsCollector(
        db, ctx.inventory, settings.backend, settings.alerts.failed_job_window, alerts.nvml
    )
    metrics = Metrics(db, ctx.inventory, f"{prefix}api/v1", extra=[operations, DiskCollector(settings)])
    metrics.install(app)
    for router in ROUTERS:
        app.include_router(router, prefix=f"{prefix}api/v1")
    app.include_router(oauth_router, prefix=prefix.rstrip("/"))
    app.include_router(admin_router, prefix=prefix.rstrip("/"))
    app.include_router(console_router, prefix=prefix.rstrip("/"))

    @app.get(f"{prefix}metrics", include_in_schema=False)
    async def prometheus(caller: Caller) -> Response:
        """Prometheus text for admins and the platform's own token (scrape with a bearer token):
        rendered in the thread pool, one rendering shared by the scrapes of one moment (core/metrics.py)."""
        from prometheus_client import CONTENT_TYPE_LATEST

        require_admin(caller, "read the platform's metrics")
        body = await db.reads.read("metrics", metrics.render)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return app


def service_probes(hub_api_url: str, public_url: str | None) -> dict[str, str]:
    """The platform's services this node watches over HTTP: the hub's API, and the proxy (the
    hub's API through it) where the hub told the service its public URL."""
    probes = {"hub": hub_api_url.rstrip("/") + "/"}
    if public_url:
        probes["proxy"] = public_url.rstrip("/") + "/hub/api/"
    return probes


def service_checks(settings: Settings, jobs: JobManager, gateway: Gateway) -> dict:
    """In-process services, each ``() -> (ok, detail)``: the job manager's loop, the SSH gateway."""

    def job_manager() -> tuple[bool, str]:
        if not jobs.running:
            return False, "the job manager's loop is not running"
        return True, ""

    def ssh_gateway() -> tuple[bool, str]:
        up = gateway.server is not None
        return up, "" if up else f"nothing listens on port {settings.ssh.port}"

    checks = {}
    if settings.jobs.enabled:
        checks["job manager"] = job_manager
    if settings.ssh.port:
        checks["ssh gateway"] = ssh_gateway
    return checks


def log_to_file(settings: Settings) -> None:
    """The service's log also goes to ``<data_dir>/logs/yitong-service.log``, rotated at
    ``ops.log_max_bytes`` keeping ``ops.log_backups`` files (the console's cluster logs)."""
    logs = settings.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    from .logfile import LogFile

    handler = LogFile(
        logs / "yitong-service.log", maxBytes=settings.ops.log_max_bytes, backupCount=settings.ops.log_backups
    )
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.getLogger().addHandler(handler)
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).addHandler(handler)


LOG_FORMAT = "[%(levelname)s %(asctime)s %(name)s] %(message)s"
#: seconds an idle HTTP/1.1 connection stays open (see main)
KEEP_ALIVE = 75


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="yitong-service",
        description="Yitong's platform service",
        epilog="subcommands: yitong-service slurm-accounts [--apply], yitong-service node-report (see --help there)",
    )
    p.add_argument("--settings", help="settings YAML (default: $YITONG_SETTINGS or ./yitong.example.yaml)")
    p.add_argument("--data-dir", help="data directory (default: $YITONG_DATA_DIR or ./.yitong)")
    p.add_argument("--ip", help="listen address (default: service.ip in settings, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default: $JUPYTERHUB_SERVICE_URL's, else service.port)")
    p.add_argument("--log-level", default=os.environ.get("YITONG_LOG_LEVEL", "info"))
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["slurm-accounts"]:  # subcommand: the sacctmgr commands for the VCs
        from ..jobs.slurm_accounts import main as slurm_accounts

        sys.exit(slurm_accounts(argv[1:]))
    if argv[:1] == ["node-report"]:  # subcommand: a node's agent for the cluster dashboard
        from ..ops.agent import main as node_report

        sys.exit(node_report(argv[1:]))
    if argv[:1] == ["verify"]:  # subcommand: rehash the dataset store and the materialise cache
        from ..datasets.cli import main as verify_store

        sys.exit(verify_store(argv[1:]))
    import uvicorn

    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT)
    try:
        settings = load_settings(args.settings, args.data_dir)
    except SettingsError as e:
        sys.exit(f"yitong-service: {e}")
    log_to_file(settings)
    service_url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
    port = args.port or service_url.port or settings.service.port
    ip = args.ip or service_url.hostname or settings.service.ip
    settings.service.ip, settings.service.port = ip, port
    from .confinement import ModeError, startup

    try:
        startup(settings)  # umask 077, the data directory's modes, the multi-user / single-person line
    except ModeError as e:
        sys.exit(f"yitong-service: {e}")
    app = create_app(settings)
    uvicorn.run(
        app,
        host=ip,
        port=port,
        log_level=args.log_level.lower(),
        access_log=False,
        # longer than the proxy keeps an idle connection to reuse (Node's agent: 5 s, uvicorn's
        # default too): a connection the proxy picks up is never one this side just closed
        timeout_keep_alive=KEEP_ALIVE,
    )


if __name__ == "__main__":  # pragma: no cover
    main()
