"""End to end with the real processes: a threshold rule crosses, Prometheus fires, Alertmanager
emails the VC's address through a real SMTP server (aiosmtpd, in-process) and posts to the
platform's webhook; the history shows firing, then resolved once the allocations are released.
Silences go through Alertmanager's API. Needs the Debian packages prometheus,
prometheus-alertmanager and prometheus-node-exporter (.ci/services.sh installs them)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from helpers import require

from tests.services.alerts.live import live_stack, missing
from tests.services.conftest import Service, build_app


@pytest.fixture
async def live(hub, db_url, tmp_path):
    require("Prometheus, Alertmanager and the node exporter", not missing(), f"missing: {missing()}")
    async with live_stack(lambda d, **kw: build_app(db_url, d, hub, **kw), tmp_path / "data") as (app, sink):
        svc = Service(app, hub)
        try:
            yield svc, sink
        finally:
            await svc.client.aclose()


async def _history(svc, status: str, timeout: float = 60, query: str = "", where=lambda event: True) -> list[dict]:
    """The history's items with ``status`` (and ``where``) once there are any: Alertmanager sends
    the email and the history webhook apart, so the email may come first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = await svc.call("admin", "GET", f"alerts/history?status={status}{query}")
        assert r.status_code == 200, r.text
        if items := [event for event in r.json()["items"] if where(event)]:
            return items
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {status} alert in the history")


async def test_quota_alert_emails_and_resolves(live):
    svc, sink = live
    status = (await svc.call("admin", "GET", "alerts/status")).json()
    assert {status[k]["state"] for k in ("prometheus", "alertmanager", "node_exporter")} == {"running"}, status
    assert status["email"] is True and status["message"] is None

    r = await svc.call("admin", "POST", "alerts/routes", json={"vc": "vision", "emails": ["ops@example.com"]})
    assert r.status_code == 201, r.text
    rule = {"name": "vision-gpus", "kind": "quota_exhausted", "vc": "vision", "threshold": 100, "severity": "critical"}
    r = await svc.call("admin", "POST", "alerts/rules", json=rule)
    assert r.status_code == 201, r.text
    assert r.json()["promql"] == '100 * yitong_vc_used{vc="vision"} / (yitong_vc_quota{vc="vision"} > 0) >= 100'

    # vision's quota holds 2 GPUs, one per person: two GPU servers exhaust it
    held = []
    for user in ("alice", "erin"):
        a = await svc.allocate(user, "vision", "gpu-1", f"{user}/gpu")
        assert a.status_code == 201, a.text
        held.append(a.json()["id"])

    fired = await sink.wait_for("[FIRING:1] vision-gpus")
    assert fired["To"] == "ops@example.com"
    assert fired["From"] == "yitong@example.com"
    body = fired.get_body(("html", "plain")).get_content()
    assert "nvidia.com/gpu" in body and "vision" in body
    (event,) = await _history(svc, "firing")
    assert event["alertname"] == "vision-gpus" and event["vc"] == "vision" and event["severity"] == "critical"
    assert event["labels"]["resource"] == "nvidia.com/gpu" and event["ends_at"] is None

    # another VC's alerts do not reach vision's address; nothing else was sent
    assert all("vision-gpus" in s for s in sink.subjects()), sink.subjects()

    for allocation in held:
        assert (await svc.call("service", "DELETE", f"allocations/{allocation}")).status_code == 204
    await sink.wait_for("[RESOLVED] vision-gpus")
    (resolved,) = await _history(svc, "resolved")
    assert resolved["alertname"] == "vision-gpus" and resolved["ends_at"] is not None
    history = (await svc.call("admin", "GET", "alerts/history?vc=vision")).json()
    assert [e["status"] for e in history["items"]] == ["resolved", "firing"]  # newest first


async def test_silence_and_reload(live):
    svc, sink = live
    alerts = svc.app.state.alerts
    r = await svc.call(
        "admin", "POST", "alerts/silences", json={"matchers": {"vc": "nlp"}, "seconds": 600, "comment": "upgrade"}
    )
    assert r.status_code == 201, r.text
    silence = r.json()
    assert silence["matchers"] == {"vc": "nlp"} and silence["created_by"] == "admin"
    assert silence["state"] == "active"
    listed = (await svc.call("admin", "GET", "alerts/silences")).json()
    assert [s["id"] for s in listed] == [silence["id"]]
    assert (await svc.call("admin", "DELETE", f"alerts/silences/{silence['id']}")).status_code == 204
    listed = (await svc.call("admin", "GET", "alerts/silences")).json()
    assert [s["state"] for s in listed] == ["expired"]
    audit = (await svc.call("admin", "GET", "audit?action=alert_silence.create")).json()
    assert audit["total"] == 1

    # a new rule reaches Prometheus (reloaded by SIGHUP): its rule API lists it (with the platform's login)
    r = await svc.call("admin", "POST", "alerts/rules", json={"name": "down", "kind": "service_down"})
    assert r.status_code == 201, r.text
    async with httpx.AsyncClient(auth=alerts.auth("prometheus")) as client:
        groups = (await client.get(alerts.urls["prometheus"] + "/api/v1/rules")).json()["data"]["groups"]
    assert [rule["name"] for g in groups for rule in g["rules"]] == ["down"]
    # and every target is scraped: the platform's /metrics with its token, the node exporter, both daemons
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(auth=alerts.auth("prometheus")) as client:
        while True:
            targets = (await client.get(alerts.urls["prometheus"] + "/api/v1/targets")).json()["data"]
            health = {t["labels"]["job"]: t["health"] for t in targets["activeTargets"]}
            if set(health.values()) == {"up"} or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
    assert health == {"yitong": "up", "node": "up", "prometheus": "up", "alertmanager": "up"}

    # a configuration Alertmanager refuses: the reload (SIGHUP, then its reload gauges) says so
    from yitong_services.core.errors import Refusal

    (alerts.dir / "alertmanager.yml").write_text("route: [not a route\n")
    with pytest.raises(Refusal) as refused:
        await alerts.reload()
    assert refused.value.status == 422
    assert (
        refused.value.detail
        == f"alertmanager refused the new configuration (its log: {alerts.children['alertmanager'].log_path})"
    )
    await alerts.apply()  # written again from the database, and taken
    assert alerts.children["alertmanager"].running
    assert (await svc.call("admin", "GET", "alerts/silences")).status_code == 200


async def test_yt_alert_commands(live, capsys):
    """``yt alert ...`` (and so ``%yt alert ...``) over real HTTP, as an admin and as a person."""
    from starlette.concurrency import run_in_threadpool

    from yitong_lab.cli.grammar import run
    from yitong_lab.client import Client

    svc, sink = live
    url = f"http://127.0.0.1:{svc.ctx.settings.service.port}/services/yitong/api/v1"

    def yt(who: str, *argv: str) -> tuple[int, str, str]:
        with Client(url=url, token=svc.hub.tokens[who]) as client:
            code = run(list(argv), client=client)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    code, out, _ = await run_in_threadpool(yt, "admin", "alert", "add", "hot", "node_cpu", "95", "--for", "60")
    assert code == 0 and "rule hot: 100 * (1 - avg by (instance)" in out
    code, out, _ = await run_in_threadpool(yt, "admin", "alert", "ls")
    assert out.splitlines()[1].split() == ["hot", "node_cpu", "95", "(cluster)", "warning", "60s"]
    code, _, err = await run_in_threadpool(yt, "admin", "alert", "add", "gpu", "node_memory", "101")
    assert code == 1 and err == "yt: the threshold of a node_memory rule is % from 0 to 100\n"
    code, out, _ = await run_in_threadpool(yt, "admin", "alert", "route", "ops@example.com", "--vc", "nlp")
    assert code == 0 and out == "route 1: nlp -> ops@example.com\n"
    code, out, _ = await run_in_threadpool(yt, "admin", "alert", "status")
    assert code == 0 and "prometheus" in out and "running" in out
    code, out, _ = await run_in_threadpool(yt, "admin", "alert", "silence", "vc=nlp", "-m", "maintenance")
    assert code == 0 and out.startswith("silence ")
    code, _, err = await run_in_threadpool(yt, "alice", "alert", "ls")
    assert code == 1 and err.startswith("yt: only admins may")


async def test_the_docs_yt_lines(live, capsys):
    """docs/operations.md's `yt alert` lines, verbatim (comments dropped), exit 0 each."""
    import re
    import shlex
    from pathlib import Path

    from starlette.concurrency import run_in_threadpool

    from yitong_lab.cli.grammar import run
    from yitong_lab.client import Client

    svc, _ = live
    text = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    section = re.search(r"### From a terminal or a notebook(.*?)\n### ", text, re.S).group(1)
    block = "".join(re.findall(r"```bash\n(.*?)```", section, re.S))  # the commands, then the silence
    lines = [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]
    assert len(lines) == 7 and all(argv[:2] == ["yt", "alert"] for argv in lines)
    url = f"http://127.0.0.1:{svc.ctx.settings.service.port}/services/yitong/api/v1"

    def yt(argv: list[str]) -> int:
        with Client(url=url, token=svc.hub.tokens["admin"]) as client:
            return run(argv, client=client)

    for argv in lines:
        assert await run_in_threadpool(yt, argv[1:]) == 0, (argv, capsys.readouterr())


async def test_a_hung_service_alerts_and_a_dead_one_restarts(live):
    """``service_down``: the node exporter stopped (SIGSTOP: its scrapes time out) fires, and
    resolves once it runs again; killed, the platform starts it again."""
    import os
    import signal

    svc, sink = live
    alerts = svc.app.state.alerts
    r = await svc.call("admin", "POST", "alerts/routes", json={"emails": ["oncall@example.com"]})
    assert r.status_code == 201, r.text
    r = await svc.call("admin", "POST", "alerts/rules", json={"name": "down", "kind": "service_down"})
    assert r.status_code == 201, r.text
    node = alerts.children["node"]
    node_down = lambda event: event["labels"]["job"] == "node"  # noqa: E731
    os.kill(node.proc.pid, signal.SIGSTOP)
    try:
        # the node's own alert, from the history: on a loaded machine another target's scrape can
        # time out (1 s) too, and its "down" joins the node's in one group, whose email's subject
        # then names only the labels they share ("[FIRING:2] down (warning down)")
        await _history(svc, "firing", query="&alertname=down", where=node_down)
        fired = await sink.wait_for("[FIRING:", "] down")
    finally:
        os.kill(node.proc.pid, signal.SIGCONT)
    assert fired["To"] == "oncall@example.com"
    # resolved once it runs again (the group's "[RESOLVED]" email waits for every alert in it)
    event = (await _history(svc, "resolved", query="&alertname=down", where=node_down))[0]
    assert event["vc"] is None

    before = node.proc.pid
    node.proc.kill()
    deadline = time.monotonic() + 30
    while not (node.proc.pid != before and node.running) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert node.running and node.proc.pid != before
    status = (await svc.call("admin", "GET", "alerts/status")).json()
    assert status["node_exporter"]["state"] == "running"


async def test_a_disk_rule_fires_from_the_services_scrape(live):
    """``disk_full`` evaluated by the real Prometheus on the service's own scrape
    (``yitong_disk_*``, alerts/disks.py): at 1% any real disk is above it, so it fires for the data
    directory's filesystem; deleted, it is gone from the rule file."""
    svc, _sink = live
    r = await svc.call("admin", "POST", "alerts/rules", json={"name": "disk", "kind": "disk_full", "threshold": 1})
    assert r.status_code == 201, r.text
    assert r.json()["promql"] == "100 * (1 - yitong_disk_avail_bytes / yitong_disk_size_bytes) >= 1"
    (event, *_) = await _history(svc, "firing", query="&alertname=disk")
    assert event["labels"]["disk"] == "data" and event["vc"] is None
    assert (await svc.call("admin", "DELETE", "alerts/rules/disk")).status_code == 204


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")  # loopback, on purpose
async def test_smtp_auth(hub, db_url, tmp_path):
    """``alerts.smtp.username``/``password``: Alertmanager logs in to an SMTP server that requires it."""
    require("Prometheus, Alertmanager and the node exporter", not missing(), f"missing: {missing()}")
    build = lambda d, **kw: build_app(db_url, d, hub, **kw)  # noqa: E731
    async with live_stack(build, tmp_path / "data", smtp_login=("yitong", "s3cret pass")) as (app, sink):
        svc = Service(app, hub)
        try:
            assert (
                await svc.call("admin", "POST", "alerts/routes", json={"emails": ["a@example.com"]})
            ).status_code == 201
            rule = {"name": "always", "kind": "expression", "expr": "vector(1) > 0"}
            assert (await svc.call("admin", "POST", "alerts/rules", json=rule)).status_code == 201
            await sink.wait_for("[FIRING:1] always")
            assert sink.logins and sink.logins[0][1] == "yitong"
        finally:
            await svc.client.aclose()
