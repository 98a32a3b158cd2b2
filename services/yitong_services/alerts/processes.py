"""Prometheus, Alertmanager and the node exporter as child processes of the service (when on PATH).

A child's port is trusted only while the process the service started holds its listening socket
(alerts/listeners.py): a port another process holds is an error that names that process and the
setting to change, and the service never sends the daemon's login to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from . import listeners

log = logging.getLogger(__name__)

UPSTREAM = {"prometheus-alertmanager": "alertmanager", "prometheus-node-exporter": "node_exporter"}
PACKAGES = {"prometheus": "prometheus", "alertmanager": "prometheus-alertmanager", "node": "prometheus-node-exporter"}
TITLES = {"prometheus": "Prometheus", "alertmanager": "Alertmanager", "node": "the node exporter"}
PORT_SETTINGS = {
    "prometheus": "alerts.prometheus_port",
    "alertmanager": "alerts.alertmanager_port",
    "node": "alerts.node_exporter_port",
}


def find(executable: str) -> str | None:
    """The executable's path: the configured name, else its upstream name."""
    return shutil.which(executable) or (shutil.which(UPSTREAM[executable]) if executable in UPSTREAM else None)


@dataclass
class Child:
    name: str  # prometheus | alertmanager | node
    argv: list[str]
    url: str  # http://ip:port
    log_path: Path
    ready_path: str = "/-/ready"
    auth: tuple[str, str] | None = None  # the daemon's login (alerts/credentials.py)
    proc: asyncio.subprocess.Process | None = None
    state: str = "stopped"  # stopped | starting | running | exited | error
    detail: str = ""
    started: float = field(default=0.0)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None and self.state == "running"

    @property
    def host(self) -> str:
        return self.url.removeprefix("http://").rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.url.rpartition(":")[2])

    def holds_port(self) -> bool:
        """Whether the process the service started holds the port's listening socket (and no
        other process listens there)."""
        proc = self.proc
        return proc is not None and proc.returncode is None and listeners.held_by(proc.pid, self.host, self.port)


def port_taken(url: str) -> bool:
    """Whether something already listens at ``http://ip:port`` (then a readiness check would be
    answered by it, not by our child)."""
    host, _, port = url.removeprefix("http://").rpartition(":")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the Go servers do: TIME_WAIT is free
        try:
            s.bind((host.strip("[]"), int(port)))
        except OSError:
            return True
    return False


def port_held(child: Child) -> str:
    """The error of a port another process holds: which daemon, which port, who holds it, what to do."""
    holder = listeners.who(child.host, child.port) or "another process"
    return (
        f"{TITLES[child.name]} cannot listen on {child.host}:{child.port}: the port is held by {holder}."
        f" Stop that process, or set {PORT_SETTINGS[child.name]} to a free port in the settings file and"
        " restart the platform service (the platform tries the port again meanwhile, and never sends"
        f" {TITLES[child.name]}'s login to it)"
    )


def _blocked(child: Child) -> None:
    child.state, child.detail = "error", port_held(child)
    log.error("%s: %s", child.name, child.detail)


async def start(child: Child, ready_within: float = 30.0) -> None:
    """Start ``child`` and wait until it holds its port and answers its readiness path with its
    login (or exits, or time runs out)."""
    if port_taken(child.url):
        _blocked(child)
        return
    child.log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    out = child.log_path.open("ab")
    try:
        child.proc = await asyncio.create_subprocess_exec(
            *child.argv, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=asyncio.subprocess.STDOUT
        )
    finally:
        out.close()
    child.state, child.started = "starting", time.monotonic()
    deadline = time.monotonic() + ready_within
    async with httpx.AsyncClient(timeout=2, auth=child.auth) as client:
        while time.monotonic() < deadline:
            if child.proc.returncode is not None:
                break
            if child.holds_port():  # else nothing is asked: a listener that is not ours gets no login
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(child.url + child.ready_path)).status_code == 200:
                        child.state, child.detail = "running", ""
                        log.info("%s is running at %s", child.name, child.url)
                        return
            await asyncio.sleep(0.1)
    if child.proc.returncode is None:
        if listeners.listening(child.host, child.port) and not child.holds_port():
            await stop(child)  # another process listens there and ours does not: ours is no use
            _blocked(child)
            return
        child.state, child.detail = "starting", f"not ready after {ready_within:g} s (log: {child.log_path})"
    elif port_taken(child.url):  # another process bound the port first: ours could not
        _blocked(child)
        return
    else:
        child.state = "exited"
        child.detail = f"exited with status {child.proc.returncode} (log: {child.log_path})"
    log.warning("%s: %s", child.name, child.detail)


async def stop(child: Child, grace: float = 10.0) -> None:
    proc = child.proc
    if proc is None or proc.returncode is not None:
        return
    proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        proc.kill()
        await proc.wait()
    child.state = "stopped"


async def supervise(child: Child, stopping: asyncio.Event, first_delay: float = 1.0, max_delay: float = 60.0) -> None:
    """Restart ``child`` whenever it exits, or try again while its port is held by another process,
    until ``stopping`` is set, waiting 1, 2, 4, ... s (at most ``max_delay``) between tries while
    it keeps failing."""
    delay = first_delay
    while not stopping.is_set():
        proc = child.proc
        if proc is None and child.state != "error":
            return  # never started, and not for want of its port
        if proc is not None and proc.returncode is None:
            await proc.wait()
            if stopping.is_set():
                return
        if proc is not None and child.state != "error":  # else its port is held: the error stays shown
            child.state = "exited"
            child.detail = f"exited with status {proc.returncode}; restarting in {delay:g} s (log: {child.log_path})"
            log.warning("%s %s", child.name, child.detail)
        try:
            await asyncio.wait_for(stopping.wait(), delay)
            return
        except TimeoutError:
            pass
        await start(child)
        delay = first_delay if child.state == "running" else min(2 * delay, max_delay)
