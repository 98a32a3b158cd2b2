"""The admin console in headless Chromium against a real hub, proxy and platform service:
reached from the hub's own nav bar (HubOAuth round trip), a VC created and edited from its
form and seen in the REST API and the audit log, a refused form showing the service's
sentence, hostile names inert, the dashboard turning a node red when its node exporter stops,
the logs page searching the hub's log, an idle server holding a GPU warned then stopped while a
busy kernel keeps it, a person added from the People page (and the hub's password route's
refusals), and a non-admin refused. Screenshots go to
docs/img/ops-*.png for docs/operations.md.

The "node exporter" here is a small HTTP server this test starts and stops (``ops.probes``):
what the dashboard watches is any URL of the node, and stopping a real exporter needs root.
"""

from __future__ import annotations

import asyncio
import http.server
import re
import threading
from pathlib import Path

import httpx
import pytest
from e2e.conftest import PASSWORDS, SETTINGS
from helpers import free_port
from lab_browser import log_in
from stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.timeout(600)]

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
VIEWPORT = (1400, 900)
EVIL = '<img src=x onerror="window.__pwned=1">'


class Exporter(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"# node exporter stand-in\n")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def exporter():
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Exporter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, f"http://127.0.0.1:{port}/metrics"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def ops_stack(tmp_path_factory, exporter):
    settings = {k: v for k, v in SETTINGS.items() if k != "ssh"}
    settings["ops"] = {"probes": {"node-exporter": exporter[1]}, "probe_interval": 1}
    # no NVML here: reclaim on idle kernels alone, in seconds rather than minutes
    settings["reclaim"] = {"enabled": True, "idle": 3, "grace": 3, "interval": 1, "require_measurement": False}
    s = Stack(tmp_path_factory.mktemp("ops"), settings, PASSWORDS).start()
    yield s
    s.stop()


def shot(page, name: str) -> None:
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS_IMG / name), timeout=90_000)


def test_console_creates_and_edits_a_vc(ops_stack, page):
    from playwright.sync_api import expect

    stack = ops_stack
    token = stack.token("admin")
    with stack.platform_client(token) as api:
        body = {"name": "hostile", "description": EVIL, "groups": [EVIL], "quota": {"cpu": 1, "memory": "1Gi"}}
        assert api.post("/vcs", json=body).status_code == 201
    log_in(stack, page, "admin")
    page.goto(f"{stack.url}/hub/home")
    page.click("#yitong-admin-link")  # the hub's nav bar -> HubOAuth -> the console
    page.wait_for_url("**/services/yitong/console")
    expect(page.locator("#yt-nav-dashboard")).to_be_visible()
    expect(page.locator("#vc-table")).to_contain_text("32Gi")  # human units
    expect(page.locator("#vc-table")).to_contain_text(EVIL)  # shown as text, never as markup
    assert page.evaluate("window.__pwned") is None
    shot(page, "ops-console.png")

    page.click("#new-vc summary")
    page.fill("#vc-name", "robotics")
    page.fill("#vc-description", "Robots")
    page.fill("#vc-groups", "vision, nlp")
    page.fill('input[data-part="quota"][data-resource="cpu"]', "4")
    page.fill('input[data-part="quota"][data-resource="memory"]', "lots")
    page.click("#vc-save")
    expect(page.locator("#vc-form .yt-result")).to_contain_text("'lots' is not a quantity")
    page.fill('input[data-part="quota"][data-resource="memory"]', "8Gi")
    page.fill('input[data-part="quota"][data-resource="nvidia.com/gpu"]', "1")
    page.fill('input[data-part="user_caps"][data-resource="nvidia.com/gpu"]', "1")
    page.check('input[name="profiles"][value="cpu-small"]')
    page.click("#vc-save")
    page.wait_for_url("**/services/yitong/console/vcs/robotics")
    with stack.platform_client(token) as api:
        vc = api.get("/vcs/robotics").json()
    assert vc["quota"] == {"cpu": 4.0, "memory": 8 * 2**30, "nvidia.com/gpu": 1}
    assert vc["groups"] == ["vision", "nlp"] and vc["profiles"] == ["cpu-small"]
    assert vc["user_caps"] == {"nvidia.com/gpu": 1}

    expect(page.locator('input[data-part="quota"][data-resource="memory"]')).to_have_value("8Gi")
    page.fill('input[data-part="quota"][data-resource="memory"]', "12Gi")
    page.fill("#vc-storage", "20Gi")  # the storage quota (vcs/storage.py)
    with page.expect_navigation():  # saved, the page loads again from the service (console.js)
        page.click("#vc-save")
    page.wait_for_load_state()
    expect(page.locator('input[data-part="quota"][data-resource="memory"]')).to_have_value("12Gi")
    expect(page.locator("#vc-storage")).to_have_value("20Gi")
    shot(page, "ops-vc.png")
    with stack.platform_client(token) as api:
        assert api.get("/vcs/robotics").json()["quota"]["memory"] == 12 * 2**30  # no restart
        assert api.get("/vcs/robotics").json()["storage_quota"] == 20 * 2**30
        actions = [(e["action"], e["target"], e["actor"]) for e in api.get("/audit").json()["items"]]
    assert ("vc.create", "vc robotics", "admin") in actions and ("vc.patch", "vc robotics", "admin") in actions
    # the new VC is offered at once: alice (vision) sees it in her spawn options
    with stack.platform_client(stack.token("alice")) as api:
        assert "robotics" in [v["name"] for v in api.get("/spawn-options").json()["vcs"]]


def test_console_adds_a_person(ops_stack, page):
    """The People page's "Add person": the hub user, a generated password shown once and the VC's
    group in one form (POST /people); the person logs in with it and is in the VC at once. A name
    JupyterHub refuses shows the service's sentence; the API refuses non-admins and unknown VCs."""
    from playwright.sync_api import expect

    stack = ops_stack
    log_in(stack, page, "admin")
    page.goto(f"{stack.url}/services/yitong/console/people")
    page.fill("#person-name", "a/b")
    page.click("#person-add button[type=submit]")
    expect(page.locator("#person-add .yt-result")).to_contain_text("'a/b' is not a valid JupyterHub user name")
    page.fill("#person-name", "Dora")
    page.check('#person-add input[name="vcs"][value="nlp"]')
    page.click("#person-add button[type=submit]")
    result = page.locator("#person-add .yt-result")
    expect(result).to_contain_text("dora is now a hub user in group nlp. Password (shown only this once): ")
    stack.passwords["dora"] = result.text_content().rsplit(": ", 1)[1].strip()
    with stack.platform_client(stack.token("dora")) as api:  # logs in with the password shown
        vcs = api.get("/me").json()["vcs"]
    assert "nlp" in vcs and "vision" not in vcs, vcs

    with stack.platform_client(stack.token("admin")) as api:
        again = api.post("/people", json={"name": "dora", "password": "a-new-pass", "vcs": ["vision"]})
        assert again.status_code == 201, again.text
        assert again.json() == {
            "name": "dora",
            "created": False,
            "groups": ["vision"],
            "vcs": ["vision"],
            "password": None,
        }
        r = api.post("/people", json={"name": "erin", "vcs": ["robots"]})
        assert (r.status_code, r.json()["detail"]) == (404, "there is no VC robots")
        actions = [(e["action"], e["target"]) for e in api.get("/audit").json()["items"]]
    assert ("person.add", "user dora") in actions
    stack.passwords["dora"] = "a-new-pass"
    with stack.platform_client(stack.token("dora")) as api:
        assert {"nlp", "vision"} <= set(api.get("/me").json()["vcs"])
    with stack.platform_client(stack.token("alice")) as api:
        r = api.post("/people", json={"name": "eve", "password": "whatever-1"})
        assert (r.status_code, r.json()["detail"]) == (403, "only admins may add people")
    with stack.hub(stack.token("admin")) as hub:
        assert hub.get("/users/eve").status_code == 404 and hub.get("/users/erin").status_code == 404
        # the hub's own password route (yitong_spawner.password_api): refusals with a sentence
        for name, body, status, sentence in [
            ("Dora", {"password": "long-enough"}, 400, "'Dora' is not a valid JupyterHub user name"),
            ("dora", {"password": "short"}, 400, "a password needs at least 8 characters"),
        ]:
            r = hub.put(f"/yitong/passwords/{name}", json=body)
            assert (r.status_code, r.json()["message"]) == (status, sentence)
    with stack.hub(stack.token("alice")) as hub:  # admin:users, which people do not have
        assert hub.put("/yitong/passwords/dora", json={"password": "taken-over"}).status_code == 403
    with stack.login("dora"):  # her password is unchanged
        pass


def loaded(page) -> None:
    """The dashboard drawn (or its error shown, which fails with the sentence)."""
    page.wait_for_selector("body[data-dashboard]", timeout=60_000)
    assert page.locator("body").get_attribute("data-dashboard") == "ready", page.locator("#dash-summary").text_content()


def test_dashboard_turns_red_when_a_service_stops(ops_stack, exporter, page):
    from playwright.sync_api import expect

    stack = ops_stack
    log_in(stack, page, "admin")
    page.goto(f"{stack.url}/services/yitong/console/dashboard")
    loaded(page)
    row = page.locator("#node-table tbody tr").first
    expect(row.locator('[data-service="node-exporter"]')).to_have_class("badge me-1 yt-up")
    expect(row.locator('[data-service="hub"]')).to_have_class("badge me-1 yt-up")
    expect(row.locator('[data-service="proxy"]')).to_have_class("badge me-1 yt-up")
    shot(page, "ops-dashboard.png")
    server, _url = exporter
    server.shutdown()
    server.server_close()
    for _ in range(20):  # the probe runs every second; the page polls every 10 s: reload
        page.wait_for_timeout(1000)
        page.reload()
        loaded(page)
        if "table-danger" in (page.locator("#node-table tbody tr").first.get_attribute("class") or ""):
            break
    row = page.locator("#node-table tbody tr").first
    expect(row).to_have_class("table-danger")
    expect(row.locator('[data-service="node-exporter"]')).to_have_class("badge me-1 yt-down")
    expect(row).to_contain_text("node-exporter is down")
    expect(page.locator(".yt-cell.yt-anomaly")).to_have_count(1)
    expect(page.locator("#dash-summary")).to_have_class("yt-bad")
    shot(page, "ops-dashboard-red.png")


def test_logs_page_searches_the_hubs_log(ops_stack, page):
    from playwright.sync_api import expect

    stack = ops_stack
    log_in(stack, page, "admin")
    page.goto(f"{stack.url}/services/yitong/console/logs")
    page.fill("#log-q", "login")
    page.click("#log-form button[type=submit]")
    expect(page.locator("#log-lines div").first).to_contain_text("[hub]")
    expect(page.locator("#log-status")).to_contain_text("line(s)")
    shot(page, "ops-logs.png")


def test_not_for_users(ops_stack):
    stack = ops_stack
    with stack.login("alice") as browser:
        for path in ("console", "console/dashboard", "console/logs", "console/people"):
            r = browser.get(f"/services/yitong/{path}")
            assert r.status_code == 403, (path, r.status_code)
    r = httpx.get(f"{stack.platform}/dashboard", headers={"Authorization": f"token {stack.token('alice')}"})
    assert r.status_code == 403


def execute(ws_url: str, token: str, code: str) -> None:
    """Send one execute_request on a kernel's websocket (the Jupyter protocol), no reply awaited."""
    import json
    import uuid

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    async def send():
        conn = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {token}"}))
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "username": "alice",
            "session": uuid.uuid4().hex,
            "msg_type": "execute_request",
            "version": "5.3",
        }
        content = {"code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False}
        await conn.write_message(
            json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"})
        )
        for _ in range(50):  # until the kernel says it is busy
            reply = json.loads(await conn.read_message())
            if reply.get("msg_type") == "status" and reply["content"].get("execution_state") == "busy":
                break
        conn.close()

    asyncio.run(send())


def test_reclaim_spares_a_busy_kernel_then_stops_the_idle_gpu_server(ops_stack):
    import time

    stack = ops_stack
    admin, alice = stack.token("admin"), stack.token("alice")
    with stack.hub(alice) as hub:
        r = hub.post("/users/alice/server", json={"vc": "vision", "profile": "gpu-1"})
        assert r.status_code in (201, 202), r.text
    server = stack.wait_ready(admin, "alice")
    base = stack.url + server["url"]
    headers = {"Authorization": f"token {alice}"}
    kernel = httpx.post(base + "api/kernels", json={"name": "python3"}, headers=headers, timeout=60).json()
    ws = base.replace("http://", "ws://") + f"api/kernels/{kernel['id']}/channels"
    execute(ws, alice, "import time; time.sleep(600)")

    def decision(token):
        for d in httpx.get(f"{stack.platform}/reclaim", headers={"Authorization": f"token {token}"}).json()["servers"]:
            if d["ref"] == "alice/":
                return d
        return None

    time.sleep(12)  # past idle + grace, several passes: the busy kernel keeps the server
    assert (decision(admin) or {}).get("reason") == "a kernel is busy", decision(admin)
    assert decision(alice)["action"] == "keep"  # alice sees her own server's decision
    assert decision(stack.token("bob")) is None  # and nobody else does
    with stack.hub(admin) as hub:
        assert hub.get("/users/alice").json()["servers"][""]["ready"]
    assert httpx.delete(base + f"api/kernels/{kernel['id']}", headers=headers, timeout=30).status_code == 204
    warned = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        d = decision(admin)
        # "warn" lasts one pass; the passes after it say "keep" with the warning's time, and a
        # loaded machine's poll may see only those
        if d and d.get("warned_at") is not None and d["action"] in ("warn", "keep") and warned is None:
            warned = d
        with stack.hub(admin) as hub:
            if "" not in hub.get("/users/alice").json().get("servers", {}):
                break
        time.sleep(0.5)
    else:
        raise AssertionError(f"alice's idle GPU server was not stopped: {decision(admin)}")
    assert warned is not None and re.fullmatch(
        r"idle with an accelerator: stopped in 3 s unless used|warned; stopped in [0-3] s unless used", warned["reason"]
    ), warned
    stopped = httpx.get(f"{stack.platform}/reclaim", headers={"Authorization": f"token {admin}"}).json()["stopped"]
    assert stopped[-1]["ref"] == "alice/" and "after a warning" in stopped[-1]["reason"]
    deadline = time.monotonic() + 30
    while [a for a in stack.allocations(admin, vc="vision") if a["user"] == "alice"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not [a for a in stack.allocations(admin, vc="vision") if a["user"] == "alice"]  # the GPU is back
