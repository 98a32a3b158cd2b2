"""The cluster dashboard: the pure builder against dict literals, then the route with real
node reports and a real probe that goes down."""

import asyncio
import http.server
import threading

import pytest
from helpers import free_port, served

from yitong_services.ops import dashboard as board

NOW = 1_000_000.0


def node(name, **kw):
    return {
        "name": name,
        "source": "agent",
        "reported": NOW - 1,
        "allocatable": {"cpu": 8, "memory": 2**34, "nvidia.com/gpu": 2},
        "allocated": {"cpu": 2, "memory": 2**32, "nvidia.com/gpu": 1},
        "used": {"cpu": 1.5, "memory": 2**33, "nvidia.com/gpu": None},
        "services": [{"name": "node-exporter", "ok": True, "detail": ""}],
    } | kw


@pytest.mark.parametrize(
    "allocatable,used,expected",
    [
        ({"cpu": 4, "memory": 8}, {"cpu": 1, "memory": 6}, 0.75),
        ({"cpu": 4}, {"cpu": 9}, 1.0),
        ({"cpu": 4, "nvidia.com/gpu": 1}, {"cpu": 1, "nvidia.com/gpu": None}, 0.25),  # unmeasured: left out
        ({"cpu": 0}, {"cpu": 1}, 0.0),
        ({}, {}, 0.0),
    ],
)
def test_heat(allocatable, used, expected):
    assert board.heat(allocatable, used) == expected


@pytest.mark.parametrize(
    "changes,expected",
    [
        ({}, []),
        ({"reported": NOW - 500}, ["no report for 500 s"]),
        (
            {"services": [{"name": "node-exporter", "ok": False, "detail": "ConnectError"}]},
            ["node-exporter is down: ConnectError"],
        ),
        ({"allocated": {"nvidia.com/gpu": 3}}, ["3 of 2 nvidia.com/gpu allocated"]),
        ({"allocated": {"cpu": 30}}, []),  # cpu and memory may be over-committed
    ],
)
def test_anomalies(changes, expected):
    assert board.anomalies(node("n", **changes), NOW, stale=120) == expected


def test_build_orders_worst_first_and_formats_amounts():
    out = board.build(
        backend="slurm",
        nodes=[node("calm"), node("hot", used={"cpu": 8}), node("down", reported=NOW - 999)],
        vcs=[{"name": "vision", "quota": {"cpu": 8, "memory": 2**34}, "used": {"cpu": 1.5, "memory": 2**31}}],
        queued={"vision": 3},
        jobs={"running": 2, "queued": 3},
        now=NOW,
        stale=120,
    )
    assert [n["name"] for n in out["nodes"]] == ["down", "hot", "calm"]
    assert out["anomalies"] == 1 and out["queued"] == 3 and out["jobs"] == {"running": 2, "queued": 3}
    calm = out["nodes"][2]
    assert calm["shown"] == {
        "cpu": {"allocatable": "8", "allocated": "2", "used": "1.5"},
        "memory": {"allocatable": "16Gi", "allocated": "4Gi", "used": "8Gi"},
        "nvidia.com/gpu": {"allocatable": "2", "allocated": "1", "used": "-"},
    }
    assert out["vcs"] == [
        {
            "name": "vision",
            "quota": {"cpu": 8, "memory": 2**34},
            "used": {"cpu": 1.5, "memory": 2**31},
            "queued": 3,
            "shown": {"cpu": "1.5 of 8", "memory": "2Gi of 16Gi"},
        }
    ]
    assert out["totals"]["allocatable"]["cpu"] == 24 and out["totals"]["used"]["cpu"] == 11.0


class Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


async def test_route_nodes_reports_and_a_stopped_service_in_red(service_factory):
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    probes = {"node-exporter": f"http://127.0.0.1:{port}/metrics"}
    async with service_factory(ops={"probes": probes, "probe_interval": 0.2}) as svc:
        monitor = svc.app.state.monitor
        await monitor.tick()
        r = await svc.call(
            "admin",
            "POST",
            "nodes/report",
            json={
                "name": "gpu-07",
                "allocatable": {"cpu": 64, "memory": "256Gi", "nvidia.com/gpu": 8},
                "allocated": {"nvidia.com/gpu": 8},
                "used": {"cpu": 12, "memory": "100Gi"},
                "services": [{"name": "slurmd", "ok": True}],
            },
        )
        assert r.status_code == 204, r.text
        assert (await svc.allocate("alice", "vision", "gpu-1", "alice/")).status_code == 201
        d = (await svc.call("admin", "GET", "dashboard")).json()
        local = next(n for n in d["nodes"] if n["source"] == "local")
        health = {s["name"]: s["ok"] for s in local["services"]}
        assert health.items() >= {"platform service": True, "node-exporter": True, "hub": True}.items(), health
        assert local["allocated"]["nvidia.com/gpu"] == 1 and local["allocatable"]["nvidia.com/gpu"] == 4
        gpu07 = next(n for n in d["nodes"] if n["name"] == "gpu-07")
        assert gpu07["shown"]["nvidia.com/gpu"] == {"allocatable": "8", "allocated": "8", "used": "-"}
        assert gpu07["shown"]["memory"] == {"allocatable": "256Gi", "allocated": "0", "used": "100Gi"}
        assert gpu07["heat"] == 0.391
        assert d["anomalies"] == 0 and d["vcs"][0]["shown"]
        server.shutdown()
        server.server_close()
        await monitor.tick()
        d = (await svc.call("admin", "GET", "dashboard")).json()
        assert d["anomalies"] == 1 and d["nodes"][0]["source"] == "local"  # worst first
        assert any(a.startswith("node-exporter is down") for a in d["nodes"][0]["anomalies"])
        assert len(monitor.history) >= 2 and "vision" in d["history"][-1]["vcs"]


async def test_report_is_bounded_and_validated(service):
    bad = {"name": "../etc", "allocatable": {"cpu": 1}}
    assert (await service.call("admin", "POST", "nodes/report", json=bad)).status_code == 422
    r = await service.call("admin", "POST", "nodes/report", json={"name": "n1", "allocatable": {"cpu": "lots"}})
    assert r.status_code == 422 and "lots" in r.text
    assert (await service.call("service", "POST", "nodes/report", json={"name": "n1"})).status_code == 204
    await asyncio.sleep(0)


@pytest.mark.parametrize(
    "resource,amount,expected",
    [
        ("memory", 25276510208, "23.5Gi"),
        ("memory", 2**34, "16Gi"),
        ("memory", 1536, "1.5Ki"),
        ("memory", 0, "0"),
        ("cpu", 1.25, "1.25"),
        ("nvidia.com/gpu", 3, "3"),
    ],
)
def test_measured_amounts_read_like_quantities(resource, amount, expected):
    from yitong_services.vcs.quantities import approx_amount

    assert approx_amount(resource, amount) == expected


async def test_node_agent_reports_through_the_route(service):
    """``yitong-service node-report`` against the route, served by uvicorn on loopback."""
    import subprocess
    import sys

    async with served(service.app) as port:
        api = f"http://127.0.0.1:{port}/services/yitong/api/v1"
        argv = [sys.executable, "-m", "yitong_services.core.app", "node-report", "--api", api, "--name", "slurm-n1"]
        argv += [
            "--source",
            "slurm",
            "--device",
            "nvidia.com/gpu=2",
            "--probe",
            f"slurmd=http://127.0.0.1:{free_port()}/",
        ]
        env = {**__import__("os").environ, "YT_TOKEN": service.hub.service_token}
        done = await asyncio.to_thread(subprocess.run, argv, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        bad = await asyncio.to_thread(
            subprocess.run, argv[:6] + ["--device", "gpu"], env=env, capture_output=True, text=True, timeout=60
        )
        assert bad.returncode != 0 and "expected NAME=VALUE" in bad.stderr
    d = (await service.call("admin", "GET", "dashboard")).json()
    node = next(n for n in d["nodes"] if n["name"] == "slurm-n1")
    assert node["source"] == "slurm" and node["allocatable"]["nvidia.com/gpu"] == 2
    assert node["used"]["memory"] > 0 and node["anomalies"][0].startswith("slurmd is down")


def test_unchanged_reports_are_reused_but_age():
    cache: dict = {}
    n = node("n1")
    first = board.node_view(n, NOW, 120, cache)
    assert first["age"] == 1.0 and first["anomalies"] == [] and len(cache) == 1
    later = board.node_view(n, NOW + 300, 120, cache)
    assert later["age"] == 301.0 and later["anomalies"] == ["no report for 301 s"]
    assert later["shown"] is first["shown"] and first["anomalies"] == []  # the cached row is not changed
    board.node_view(node("n1", reported=NOW + 299), NOW + 300, 120, cache)
    assert len(cache) == 2
