"""The alerts API without the processes (``alerts.run`` off, as in every service test but the live
ones): refusals as 4xx sentences, admin only, the webhook's secret, the files it writes, /metrics."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml
from jobs_helpers import py_job, wait_state

from yitong_services.alerts.manager import INSTALL

RULE = {"name": "mem", "kind": "node_memory", "threshold": 80, "severity": "warning", "for_seconds": 60}


@pytest.mark.parametrize(
    "body,status,detail",
    [
        ({**RULE, "threshold": 150}, 422, "the threshold of a node_memory rule is % from 0 to 100"),
        ({**RULE, "vc": "vision"}, 422, "a node_memory rule is cluster-wide: leave vc out"),
        ({**RULE, "kind": "disk"}, 422, "unknown rule kind 'disk': one of node_memory, node_cpu,"),
        ({**RULE, "severity": "page"}, 422, "severity: Input should be 'info', 'warning' or 'critical'"),
        ({**RULE, "for_seconds": -1}, 422, "for_seconds: Input should be greater than or equal to 0"),
        ({**RULE, "name": "Bad Name"}, 422, "name: 'Bad Name' is not a valid name"),
        ({**RULE, "kind": "job_failed", "threshold": 1, "vc": "nope"}, 404, "there is no VC nope"),
        ({"name": "x", "kind": "expression", "expr": "sum(up"}, 422, "the expression has an unclosed bracket"),
        (
            {"name": "x", "kind": "expression", "expr": "up >> 1"},
            422,
            "Prometheus cannot parse the expression: 1:5: parse error: unexpected <op:>>",
        ),
        ({"name": "x", "kind": "service_down", "threshold": 1}, 422, "a service_down rule takes no threshold"),
    ],
)
async def test_rule_refusals(service, body, status, detail):
    r = await service.call("admin", "POST", "alerts/rules", json=body)
    assert r.status_code == status, r.text
    assert r.json()["detail"].startswith(detail), r.json()["detail"]


async def test_rules_routes_and_files(service):
    ctx = service.ctx
    r = await service.call("admin", "POST", "alerts/rules", json=RULE)
    assert r.status_code == 201, r.text
    assert r.json()["promql"].endswith("> 80")
    assert (await service.call("admin", "POST", "alerts/rules", json=RULE)).status_code == 409
    r = await service.call(
        "admin", "POST", "alerts/rules", json={"name": "gpus", "kind": "quota_exhausted", "vc": "vision"}
    )
    assert r.status_code == 201 and r.json()["threshold"] == 100  # the kind's default
    r = await service.call("admin", "PATCH", "alerts/rules/mem", json={"threshold": 90, "severity": "critical"})
    assert r.status_code == 200 and r.json()["threshold"] == 90 and r.json()["severity"] == "critical"
    r = await service.call("admin", "PATCH", "alerts/rules/mem", json={"threshold": 900})
    assert r.status_code == 422 and "from 0 to 100" in r.json()["detail"]
    r = await service.call("admin", "POST", "alerts/routes", json={"vc": "vision", "emails": ["a@example.com"]})
    assert r.status_code == 201, r.text
    route = r.json()["id"]
    r = await service.call("admin", "POST", "alerts/routes", json={"emails": ["not an address"]})
    assert r.status_code == 422 and "'not an address' is not an email address" in r.json()["detail"]
    r = await service.call("admin", "POST", "alerts/routes", json={"emails": ["a@example.com\nBcc: x@evil.io"]})
    assert r.status_code == 422

    d = Path(ctx.settings.data_dir) / "alerts"
    rules = yaml.safe_load((d / "rules.yml").read_text())
    assert [(x["alert"], x["expr"]) for x in rules["groups"][0]["rules"]] == [
        ("gpus", '100 * yitong_vc_used{vc="vision"} / (yitong_vc_quota{vc="vision"} > 0) >= 100'),
        ("mem", '100 * (1 - node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"}) > 90'),
    ]
    am = yaml.safe_load((d / "alertmanager.yml").read_text())
    assert [x["name"] for x in am["receivers"]] == ["nowhere", "yitong-history"]  # no SMTP host: no email
    prom = yaml.safe_load((d / "prometheus.yml").read_text())
    assert prom["scrape_configs"][0]["metrics_path"] == "/services/yitong/metrics"
    for name in ("rules.yml", "alertmanager.yml", "prometheus.yml", "webhook-secret", "scrape-token"):
        assert stat.S_IMODE((d / name).stat().st_mode) == 0o600, name
    assert (d / "scrape-token").read_text() == service.hub.service_token

    assert (await service.call("admin", "DELETE", f"alerts/routes/{route}")).status_code == 204
    assert (await service.call("admin", "DELETE", f"alerts/routes/{route}")).status_code == 404
    assert (await service.call("admin", "DELETE", "alerts/rules/mem")).status_code == 204
    assert (await service.call("admin", "GET", "alerts/rules/mem")).json() == {"detail": "there is no alert rule mem"}
    assert [x["name"] for x in (await service.call("admin", "GET", "alerts/rules")).json()] == ["gpus"]
    audit = (await service.call("admin", "GET", "audit")).json()["items"]
    assert {e["action"] for e in audit} >= {"alert_rule.create", "alert_rule.patch", "alert_rule.delete"}


async def test_not_installed_says_what_to_install(service_factory):
    missing = {"prometheus_bin": "no-such-prometheus", "alertmanager_bin": "no-such-alertmanager"}
    async with service_factory(alerts={"run": True, **missing, "node_exporter_port": 0}) as svc:
        status = (await svc.call("admin", "GET", "alerts/status")).json()
        assert status["message"] == INSTALL
        assert status["prometheus"] == {
            "installed": False,
            "state": "missing",
            "url": "http://127.0.0.1:9090",
            "detail": "install the Debian package prometheus",
        }
        assert status["node_exporter"]["state"] in ("off", "missing")
        assert status["accelerators"] is False  # no GPU here: NVML is absent, and says so
        r = await svc.call("admin", "GET", "alerts/silences")
        assert r.status_code == 409 and r.json()["detail"] == INSTALL
        # rules are still kept (and written) for when it is installed
        assert (await svc.call("admin", "POST", "alerts/rules", json=RULE)).status_code == 201


async def test_a_port_in_use_is_reported_not_taken_over(service_factory):
    """Another Prometheus (anything) on the configured port: ours is not started, and the status
    says why (an error naming the port, the process holding it and the setting to change), instead
    of the other process answering our readiness checks and reloads. The attack from another
    account: test_alerts_locked.py."""
    import os
    import shutil
    import socket

    from helpers import free_port, require

    require("Prometheus", shutil.which("prometheus") is not None, "install the Debian package prometheus")
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        settings = {"run": True, "prometheus_port": port, "alertmanager_port": free_port(), "node_exporter_port": 0}
        async with service_factory(alerts=settings) as svc:
            await svc.app.state.alerts.wait_started()
            status = (await svc.call("admin", "GET", "alerts/status")).json()
            assert status["prometheus"]["state"] == "error"
            detail = status["prometheus"]["detail"]
            assert detail.startswith(
                f"Prometheus cannot listen on 127.0.0.1:{port}: the port is held by pid {os.getpid()} ("
            ), detail
            assert "set alerts.prometheus_port to a free port in the settings file" in detail
            assert status["message"] == detail
            assert status["alertmanager"]["state"] == "running"


async def test_status_when_not_started(service):
    status = (await service.call("admin", "GET", "alerts/status")).json()
    assert status["email"] is False
    if status["prometheus"]["installed"]:
        assert status["prometheus"]["state"] == "off"
        assert status["message"] == "email is off: set alerts.smtp.host (and port, sender) in the settings file"
    r = await service.call("admin", "POST", "alerts/silences", json={"matchers": {"vc": "x"}, "comment": "c"})
    assert r.status_code == 409


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "alerts/status"),
        ("GET", "alerts/rules"),
        ("POST", "alerts/rules"),
        ("GET", "alerts/routes"),
        ("GET", "alerts/history"),
        ("GET", "alerts/silences"),
    ],
)
async def test_people_are_refused(service, method, path):
    body = RULE if method == "POST" else None
    for who in ("alice", "bob"):
        r = await service.call(who, method, path, json=body)
        assert r.status_code == 403, r.text
        assert r.json()["detail"].startswith("only admins may")


def _alert(status: str, fingerprint: str = "f1", ends: str = "0001-01-01T00:00:00Z") -> dict:
    return {
        "status": status,
        "labels": {"alertname": "mem", "severity": "warning", "vc": "vision", "instance": "n1"},
        "annotations": {"summary": "mem: node memory in use above 80%"},
        "startsAt": "2026-01-01T10:00:00.5Z",
        "endsAt": ends,
        "generatorURL": "http://x/graph",
        "fingerprint": fingerprint,
    }


async def test_webhook_takes_the_secret_and_keeps_each_event_once(service):
    secret = (Path(service.ctx.settings.data_dir) / "alerts" / "webhook-secret").read_text()
    payload = {"version": "4", "status": "firing", "receiver": "yitong-history", "alerts": [_alert("firing")]}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"token {service.hub.admin_token}"}):
        r = await service.client.post("/services/yitong/api/v1/alerts/webhook", json=payload, headers=headers)
        assert r.status_code == 401, r.text
    hook = {"Authorization": f"Bearer {secret}"}
    for _ in range(2):  # a repeat notification
        r = await service.client.post("/services/yitong/api/v1/alerts/webhook", json=payload, headers=hook)
        assert r.status_code == 204, r.text
    resolved = {**payload, "alerts": [_alert("resolved", ends="2026-01-01T10:05:00Z")]}
    assert (
        await service.client.post("/services/yitong/api/v1/alerts/webhook", json=resolved, headers=hook)
    ).status_code == 204
    r = await service.client.post("/services/yitong/api/v1/alerts/webhook", content=b"{", headers=hook)
    assert r.status_code == 422 and r.json()["detail"].startswith("not an Alertmanager webhook payload")
    items = (await service.call("admin", "GET", "alerts/history")).json()["items"]
    assert [(e["status"], e["vc"], e["ends_at"]) for e in items] == [
        ("resolved", "vision", "2026-01-01T10:05:00Z"),
        ("firing", "vision", None),
    ]
    assert items[1]["starts_at"] == "2026-01-01T10:00:00.500000Z"
    assert (await service.call("admin", "GET", "alerts/history?status=firing&vc=nlp")).json()["total"] == 0


async def test_metrics_publish_what_rules_read(service):
    a = await service.allocate("alice", "vision", "gpu-1", "alice/gpu")
    assert a.status_code == 201, a.text
    text = (await service.call("admin", "GET", "/services/yitong/metrics")).text
    lines = set(text.splitlines())
    node = _node()
    assert f'yitong_node_allocated{{node="{node}",resource="nvidia.com/gpu"}} 1.0' in lines
    assert f'yitong_node_allocatable{{node="{node}",resource="nvidia.com/gpu"}} 4.0' in lines
    assert {
        'yitong_vc_quota{resource="nvidia.com/gpu",vc="vision"} 2.0',
        'yitong_vc_used{resource="nvidia.com/gpu",vc="vision"} 1.0',
        'yitong_vc_used{resource="memory",vc="vision"} 2.147483648e+09',
        'yitong_vc_used{resource="cpu",vc="nlp"} 0.0',
        'yitong_allocations{kind="server",vc="vision"} 1.0',
        'yitong_allocations{kind="job",vc="nlp"} 0.0',
    } <= lines
    assert not any(line.startswith("yitong_jobs{") for line in lines)  # no job yet: no state to count
    assert not any(line.startswith(("yitong_vc_queue_length{", "yitong_jobs_failed_recent{")) for line in lines)
    job = await service.call("alice", "POST", "jobs", json=py_job("boom", "vision", "raise SystemExit(3)"))
    assert job.status_code == 201, job.text
    assert (await wait_state(service, "alice", job.json()["id"]))["state"] == "failed"
    lines = set((await service.call("admin", "GET", "/services/yitong/metrics")).text.splitlines())
    assert 'yitong_jobs{state="failed",vc="vision"} 1.0' in lines
    assert 'yitong_jobs_failed_recent{vc="vision"} 1.0' in lines
    assert 'yitong_vc_queue_length{vc="vision"} 0.0' in lines
    assert 'yitong_accelerator_metrics_available{source="nvml"} 0.0' in lines  # no GPU on this machine
    assert not any(line.startswith("yitong_accelerator_utilization_percent{") for line in lines)


async def test_scrapes_share_a_rendering_until_a_write(service):
    """Scrapes of one moment get one rendering (its request counters do not move between them);
    a committed write is in the next scrape (core/metrics.py, core/readcache.py)."""

    async def scrape() -> str:
        r = await service.call("admin", "GET", "/services/yitong/metrics")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        return r.text

    # within the cache's second (a slow machine may need another try)
    assert any([await scrape() == await scrape() for _ in range(3)])
    before = await scrape()
    assert (await service.allocate("alice", "vision", "gpu-1", "alice/gpu")).status_code == 201
    after = await scrape()
    assert 'yitong_allocations{kind="server",vc="vision"} 1.0' in after.splitlines()
    assert 'yitong_allocations{kind="server",vc="vision"} 0.0' in before.splitlines()


def _node() -> str:
    import socket

    return socket.gethostname()


async def test_the_docs_examples_are_accepted(service):
    """docs/operations.md's request bodies, verbatim."""
    import json
    import re

    text = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    blocks = re.findall(r"```json\n(.*?)\n```", text, re.S)
    assert len(blocks) == 3
    for block in blocks:
        body = json.loads(block)
        r = await service.call("admin", "POST", "alerts/routes" if "emails" in body else "alerts/rules", json=body)
        assert r.status_code == 201, r.text
