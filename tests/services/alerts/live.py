"""A live alerting stack for the tests and the bench: the platform service served by uvicorn on a free
port with ``alerts.run`` on (it starts the real Prometheus, Alertmanager and node exporter on free
loopback ports) and an in-process SMTP server (aiosmtpd) that keeps what it receives."""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
import shutil
import time
from collections.abc import AsyncIterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from helpers import free_port

BINARIES = ("prometheus", "prometheus-alertmanager", "prometheus-node-exporter", "promtool")


def missing() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


class Sink:
    """aiosmtpd's handler: every message received, parsed."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.arrived: list[float] = []
        self.logins: list[tuple[str, str]] = []  # (mechanism, login) of accepted SMTP AUTH

    def authenticator(self, credentials: tuple[str, str]) -> Any:
        """aiosmtpd's ``authenticator=``: accepts exactly ``credentials``."""
        from aiosmtpd.smtp import AuthResult, LoginPassword

        def check(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
            ok = isinstance(data, LoginPassword) and (data.login.decode(), data.password.decode()) == credentials
            if ok:
                self.logins.append((mechanism, data.login.decode()))
            return AuthResult(success=ok)

        return check

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append(msg)  # type: ignore[arg-type]
        self.arrived.append(time.monotonic())
        return "250 OK"

    def subjects(self) -> list[str]:
        return [str(m["Subject"]) for m in self.messages]

    async def wait_for(self, *texts: str, timeout: float = 90) -> EmailMessage:
        """The first email whose subject holds each of ``texts``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.messages:
                if all(text in str(m["Subject"]) for text in texts):
                    return m
            await asyncio.sleep(0.05)
        raise AssertionError(f"no email with {texts!r} in its subject; got {self.subjects()}")


def alerts_settings(smtp_port: int, interval: float = 1.0) -> dict[str, Any]:
    return {
        "run": True,
        "prometheus_port": free_port(),
        "alertmanager_port": free_port(),
        "node_exporter_port": free_port(),
        "scrape_interval": interval,
        "evaluation_interval": interval,
        "group_wait": 0,
        "group_interval": 1,
        "smtp": {"host": "127.0.0.1", "port": smtp_port, "sender": "yitong@example.com"},
    }


@contextlib.asynccontextmanager
async def live_stack(
    build_app: Any, data_dir: Path, interval: float = 1.0, smtp_login: tuple[str, str] | None = None, **overrides: Any
) -> AsyncIterator[Any]:
    """``(app, sink)``: ``build_app(data_dir, **settings)`` is served on a free port, its alerting
    processes started and ready. ``smtp_login``: the SMTP server requires AUTH with it (over plain
    SMTP on loopback, which Alertmanager allows), and the settings carry it."""
    import uvicorn
    from aiosmtpd.controller import Controller

    sink = Sink()
    smtp_port = free_port()
    auth: dict[str, Any] = {}
    alerts = alerts_settings(smtp_port, interval) | overrides.pop("alerts", {})
    if smtp_login:
        # PLAIN only: aiosmtpd's LOGIN prompt ("User Name") is not the "Username:" Alertmanager expects
        auth = {
            "authenticator": sink.authenticator(smtp_login),
            "auth_required": True,
            "auth_require_tls": False,
            "auth_exclude_mechanism": ["LOGIN"],
        }
        alerts["smtp"] |= {"username": smtp_login[0], "password": smtp_login[1]}
    controller = Controller(sink, hostname="127.0.0.1", port=smtp_port, **auth)
    controller.start()
    port = free_port()
    app = build_app(data_dir, service={"port": port}, alerts=alerts)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.05)
        await app.state.alerts.wait_started()
        yield app, sink
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 60)
        controller.stop()
