"""The monitoring locked, attacked from another account: a process running as a throwaway system
account (an ordinary local user, as a person's kernel or job is) against the real Prometheus,
Alertmanager and node exporter the platform starts, and against the platform's own /metrics and
history webhook. Each call is refused (401 without the daemon's login, 403 for the lifecycle API
even with it), and the platform's own use still works (its silences, its scrapes; the live tests
cover rules, the history and email). A port taken before the service starts is an error naming
the port, the daemon, the account holding it and the setting to change, on the console too, and
the squatter is sent nothing.

Needs root (the account is created with ``useradd --system``; CI runs as root) and the Debian
packages prometheus, prometheus-alertmanager and prometheus-node-exporter.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import secrets
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from helpers import free_port, require

from tests.services.alerts.live import live_stack, missing
from tests.services.conftest import PREFIX, Service, build_app
from yitong_services.alerts import processes

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the attacker's account is made with useradd (root)")

CURL = shutil.which("curl") or "/usr/bin/curl"
SYSTEM_PYTHON = "/usr/bin/python3"  # the attacker's programs: the system's interpreter, standard library only


@pytest.fixture(scope="module")
def stranger():
    """``(name, uid, gid)`` of a throwaway system account, removed at teardown."""
    require("useradd", shutil.which("useradd") is not None, "install the Debian package passwd")
    name = f"yt-probe-{secrets.token_hex(3)}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True, timeout=30
    )
    entry = pwd.getpwnam(name)
    try:
        yield name, entry.pw_uid, entry.pw_gid
    finally:
        subprocess.run(["userdel", name], check=False, timeout=30)


def as_stranger(stranger, argv: list[str], **kw) -> subprocess.CompletedProcess:
    _, uid, gid = stranger
    return subprocess.run(
        argv, user=uid, group=gid, extra_groups=[], cwd="/", capture_output=True, text=True, timeout=60, **kw
    )


async def curl(stranger, method: str, url: str, *extra: str) -> int:
    """The HTTP status the stranger's curl gets (0: no answer); ``stranger`` None: as root, the
    platform's account. In a thread: the platform's service answers on this event loop."""
    argv = [CURL, "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method, *extra, url]
    if stranger is None:
        done = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=60)
    else:
        done = await asyncio.to_thread(as_stranger, stranger, argv)
    return int(done.stdout or 0)


class Recorder(BaseHTTPRequestHandler):
    """A further node exporter (``alerts.node_targets``): keeps each scrape's Authorization header."""

    seen: list[str | None] = []

    def do_GET(self) -> None:
        Recorder.seen.append(self.headers.get("Authorization"))
        body = b"# TYPE probe gauge\nprobe 1\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
async def locked(hub, tmp_path_factory):
    """One live stack for the attacks (on SQLite: what is attacked does not depend on the database)."""
    require("Prometheus, Alertmanager and the node exporter", not missing(), f"missing: {missing()}")
    root = tmp_path_factory.mktemp("locked")
    db_url = f"sqlite:///{root / 'yitong.sqlite'}"
    further = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=further.serve_forever, daemon=True).start()
    node_targets = [f"127.0.0.1:{further.server_address[1]}"]
    build = lambda d, **kw: build_app(db_url, d, hub, **kw)  # noqa: E731
    data = root / "data"
    try:
        async with live_stack(build, data, alerts={"node_targets": node_targets}) as (app, sink):
            svc = Service(app, hub)
            try:
                yield svc
            finally:
                await svc.client.aclose()
    finally:
        further.shutdown()
        further.server_close()


def _url(svc, name: str) -> str:
    return svc.app.state.alerts.urls[name]


def _login(svc, name: str) -> str:
    user, password = svc.app.state.alerts._pair(name)
    return f"{user}:{password}"


async def test_prometheus_takes_no_orders_from_strangers(locked, stranger):
    svc = locked
    prom = _url(svc, "prometheus")
    query = f"{prom}/api/v1/query?query=yitong_vc_quota"
    assert await curl(stranger, "GET", query) == 401  # every VC's series
    assert await curl(stranger, "GET", query, "-u", "yitong:guessed") == 401
    assert await curl(stranger, "GET", f"{prom}/api/v1/targets") == 401
    assert await curl(stranger, "POST", f"{prom}/-/quit") == 401
    assert await curl(stranger, "POST", f"{prom}/-/reload") == 401
    # the lifecycle API is off: not even the platform's own login stops Prometheus over HTTP
    login = _login(svc, "prometheus")
    assert await curl(None, "POST", f"{prom}/-/quit", "-u", login) == 403
    await asyncio.sleep(0.5)
    child = svc.app.state.alerts.children["prometheus"]
    assert child.running and child.holds_port()
    assert await curl(None, "GET", query, "-u", login) == 200


async def test_alertmanager_takes_no_orders_from_strangers(locked, stranger):
    svc = locked
    am = _url(svc, "alertmanager")
    # an admin's silence, made through the platform (its login)
    r = await svc.call(
        "admin", "POST", "alerts/silences", json={"matchers": {"vc": "nlp"}, "seconds": 600, "comment": "m"}
    )
    assert r.status_code == 201, r.text
    silence = r.json()["id"]
    body = json.dumps(
        {
            "matchers": [{"name": "vc", "value": "vision", "isRegex": False, "isEqual": True}],
            "startsAt": "2026-01-01T00:00:00Z",
            "endsAt": "2099-01-01T00:00:00Z",
            "createdBy": "mallory",
            "comment": "quiet",
        }
    )
    json_body = ["-H", "Content-Type: application/json", "--data", body]
    assert await curl(stranger, "POST", f"{am}/api/v2/silences", *json_body) == 401
    assert await curl(stranger, "DELETE", f"{am}/api/v2/silence/{silence}") == 401
    assert await curl(stranger, "GET", f"{am}/api/v2/silences") == 401
    alert = json.dumps([{"labels": {"alertname": "forged", "vc": "vision", "severity": "critical"}}])
    assert (
        await curl(stranger, "POST", f"{am}/api/v2/alerts", "-H", "Content-Type: application/json", "--data", alert)
        == 401
    )
    assert await curl(stranger, "POST", f"{am}/-/reload") == 401
    # the admin's silence is still active, and the only one
    listed = (await svc.call("admin", "GET", "alerts/silences")).json()
    assert [(s["id"], s["state"]) for s in listed] == [(silence, "active")]
    assert (await svc.call("admin", "DELETE", f"alerts/silences/{silence}")).status_code == 204


async def test_the_node_exporter_and_the_platforms_endpoints_refuse_strangers(locked, stranger):
    svc = locked
    assert await curl(stranger, "GET", f"{_url(svc, 'node')}/metrics") == 401
    port = svc.ctx.settings.service.port
    base = f"http://127.0.0.1:{port}{PREFIX}"
    assert await curl(stranger, "GET", f"{base}metrics") == 401
    person = ["-H", f"Authorization: token {svc.hub.tokens['alice']}"]  # what a person's kernel holds
    assert await curl(stranger, "GET", f"{base}metrics", *person) == 403
    forged = json.dumps(
        {
            "version": "4",
            "status": "firing",
            "receiver": "yitong-history",
            "alerts": [
                {
                    "status": "firing",
                    "labels": {"alertname": "forged", "vc": "vision"},
                    "annotations": {},
                    "startsAt": "2026-01-01T00:00:00Z",
                    "endsAt": "0001-01-01T00:00:00Z",
                    "fingerprint": "f0",
                }
            ],
        }
    )
    hook = f"{base}api/v1/alerts/webhook"
    json_body = ["-H", "Content-Type: application/json", "--data", forged]
    assert await curl(stranger, "POST", hook, *json_body) == 401
    assert await curl(stranger, "POST", hook, "-H", "Authorization: Bearer guessed", *json_body) == 401
    assert await curl(stranger, "POST", hook, *person, *json_body) == 401
    history = (await svc.call("admin", "GET", "alerts/history?alertname=forged")).json()
    assert history["total"] == 0


async def test_the_platform_still_scrapes_and_sends_no_login_to_further_nodes(locked):
    """Prometheus scrapes every target with its own credential (up == 1); the further node
    exporters of ``alerts.node_targets`` are scraped as ``job="node"`` without any login."""
    import httpx

    svc = locked
    alerts = svc.app.state.alerts
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(auth=alerts.auth("prometheus")) as client:
        while True:
            targets = (await client.get(alerts.urls["prometheus"] + "/api/v1/targets")).json()["data"]
            health = {(t["scrapePool"], t["labels"]["job"]): t["health"] for t in targets["activeTargets"]}
            if set(health.values()) == {"up"} or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
    assert health == {
        ("yitong", "yitong"): "up",
        ("prometheus", "prometheus"): "up",
        ("alertmanager", "alertmanager"): "up",
        ("node", "node"): "up",
        ("node-targets", "node"): "up",
    }
    assert Recorder.seen and set(Recorder.seen) == {None}


SQUATTER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
while True:
    conn, _ = s.accept()
    conn.settimeout(2)
    try:
        got = conn.recv(65536)
    except OSError:
        got = b""
    print("got", got[:2000].decode(errors="replace").replace("\\n", " | "), flush=True)
    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nOK")
    conn.close()
"""


def _squat(stranger, port: int) -> subprocess.Popen:
    """The stranger's program listening on ``port`` (answering 200 to anything), once it listens."""
    squatter = subprocess.Popen(
        [SYSTEM_PYTHON, "-c", SQUATTER, str(port)],
        user=stranger[1],
        group=stranger[2],
        extra_groups=[],
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert squatter.stdout.readline().strip() == "listening"
    return squatter


async def test_a_squatter_on_prometheus_port_is_named_and_sent_nothing(hub, tmp_path, stranger):
    """Another account listens on Prometheus' port before the service starts (and answers
    anything with 200): the status and the console name the port, Prometheus, the account and the
    setting to change; the squatter receives no request (so no login), and the platform's other
    daemons run."""
    require("Prometheus, Alertmanager and the node exporter", not missing(), f"missing: {missing()}")
    port = free_port()
    squatter = _squat(stranger, port)
    try:
        db_url = f"sqlite:///{tmp_path / 'yitong.sqlite'}"
        build = lambda d, **kw: build_app(db_url, d, hub, **kw)  # noqa: E731
        async with live_stack(build, tmp_path / "data", alerts={"prometheus_port": port}) as (app, _):
            svc = Service(app, hub)
            try:
                status = (await svc.call("admin", "GET", "alerts/status")).json()
                prom = status["prometheus"]
                assert prom["state"] == "error", status
                detail = prom["detail"]
                assert detail.startswith(
                    f"Prometheus cannot listen on 127.0.0.1:{port}: the port is held by pid {squatter.pid} (python3)"
                    f" of account {stranger[0]} (uid {stranger[1]})."
                ), detail
                assert "set alerts.prometheus_port to a free port in the settings file" in detail
                assert status["message"] == detail
                assert status["alertmanager"]["state"] == "running" and status["node_exporter"]["state"] == "running"
                page = (await svc.call("admin", "GET", f"{PREFIX}console")).text
                assert f"cannot listen on 127.0.0.1:{port}: the port is held by pid {squatter.pid}" in page
                assert stranger[0] in page and "alerts.prometheus_port" in page
                # a rule still applies (nothing is reloaded where Prometheus is not ours)
                r = await svc.call("admin", "POST", "alerts/rules", json={"name": "down", "kind": "service_down"})
                assert r.status_code == 201, r.text
            finally:
                await svc.client.aclose()
    finally:
        squatter.kill()
        out, _ = squatter.communicate(timeout=30)
    assert "got" not in out, out  # nobody connected to the squatter: no readiness check, no login


async def test_a_port_taken_after_the_check_gets_nothing(tmp_path, stranger):
    """The stranger binds the port after the service found it free, before "its" daemon listens
    (here a daemon that never does: ``sleep``): the service sends no request there, stops its
    child and names the stranger. Without the listener's check the readiness request, with the
    login, would go to the stranger, who answers 200."""
    port = free_port()
    child = processes.Child(
        "prometheus", ["sleep", "60"], f"http://127.0.0.1:{port}", tmp_path / "p.log", auth=("yitong", "secret")
    )
    started = asyncio.create_task(processes.start(child, ready_within=3))
    while child.proc is None:
        await asyncio.sleep(0.01)
    squatter = await asyncio.to_thread(_squat, stranger, port)
    try:
        await started
        assert child.state == "error", child.detail
        assert f"held by pid {squatter.pid} (python3) of account {stranger[0]}" in child.detail
        assert child.proc.returncode is not None  # ours is stopped: it could not have its port
    finally:
        squatter.kill()
        out, _ = squatter.communicate(timeout=30)
    assert "got" not in out, out
