"""Operations: alerts and the metrics exporter, on the whole embedded platform (hub, proxy, platform
service) started as `make run` does, with the real Prometheus, Alertmanager and node exporter it
starts itself and an in-process SMTP server (aiosmtpd) as the mail sink.

    .venv/bin/python bench/ops.py [--quick] [--cases abc] [--interval 5] [--repeat 5] [--vcs 20,200] [--scrapes 500]

Cases (each prints one line starting with its letter and ending with `ratio R`, R = the reference
figure over ours, above 1: we are ahead):

  (b) an alert fires (its email is in the sink) within two evaluation intervals of its threshold
      being crossed: VC quota exhausted by two allocations; scrape and evaluation interval E,
      Alertmanager's group_wait 0. Reference: the target, 2 x E; ours: the slowest of --repeat runs.
  (c) the exporter's scrape <= 50 ms: GET <prefix>metrics on the service's port with the token
      Prometheus is given (<data_dir>/alerts/scrape-token), as Prometheus scrapes it, with 20 and then
      200 VCs (--vcs) holding an allocation each, --scrapes times each. Prometheus scrapes once per
      interval, and the platform keeps a rendering only until its next committed write (at most
      1 s), so each timed scrape follows a write (a VC's description changed) and renders afresh;
      the node exporter's /metrics is scraped alternately for comparison. Reference: the 50 ms
      target; ours: the p99 with the most VCs (p50/p99 of each count printed).

  (a) the cluster dashboard's API with 500 nodes and 5,000 jobs (p99 <= 300 ms) and its page in
      Chromium (<= 1 s): bench/ops_dashboard.py, run first here (its own service, no hub).

``--quick``: E = 2 s, 3 runs of (b), 100 scrapes at each VC count for (c), 100 nodes and 1,000 jobs
for (a): about two minutes. ``--cases c`` runs only (c).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from helpers import free_port  # noqa: E402
from stack import Stack  # noqa: E402

sys.path.insert(0, str(ROOT))
from tests.services.alerts.live import Sink  # noqa: E402


def settings(interval: float, smtp_port: int) -> dict:
    return {
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        # the allocations stand for servers that never start: no reconciler dropping them
        "service": {"reconcile_interval": 0},
        "profiles": {"cpu": {"display_name": "CPU", "cpu": 1, "memory": "64Mi"}},
        "vcs": {"bench": {"quota": {"cpu": 2, "memory": "1Gi"}, "groups": ["bench"], "profiles": ["cpu"]}},
        "groups": {"bench": ["admin"]},
        "alerts": {
            "run": True,
            "prometheus_port": free_port(),
            "alertmanager_port": free_port(),
            "node_exporter_port": free_port(),
            "scrape_interval": interval,
            "evaluation_interval": interval,
            "group_wait": 0,
            "group_interval": 1,
            "smtp": {"host": "127.0.0.1", "port": smtp_port, "sender": "yitong@example.com"},
        },
    }


def wait_running(api: httpx.Client, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = api.get("alerts/status").json()
        states = {status[k]["state"] for k in ("prometheus", "alertmanager", "node_exporter")}
        if states == {"running"}:
            return status
        if time.monotonic() > deadline:
            raise RuntimeError(f"the alerting processes did not start: {status}")
        time.sleep(0.2)


def wait_mail(sink: Sink, text: str, after: int, timeout: float = 120) -> float:
    """The monotonic time the first message after index ``after`` with ``text`` arrived."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i in range(after, len(sink.messages)):
            if text in str(sink.messages[i]["Subject"]):
                return sink.arrived[i]
        time.sleep(0.01)
    raise TimeoutError(f"no {text!r} email; subjects: {sink.subjects()}")


def case_b(api: httpx.Client, sink: Sink, interval: float, repeat: int) -> None:
    api.post("alerts/routes", json={"vc": "bench", "emails": ["ops@example.com"]}).raise_for_status()
    rule = {"name": "bench-quota", "kind": "quota_exhausted", "vc": "bench", "threshold": 100, "severity": "critical"}
    api.post("alerts/rules", json=rule).raise_for_status()
    time.sleep(2 * interval)  # Prometheus has reloaded and scraped the quiet state
    times = []
    for i in range(repeat):
        held = []
        seen = len(sink.messages)
        crossed = time.monotonic()
        for n in range(2):
            body = {"user": "admin", "vc": "bench", "profile": "cpu", "kind": "server", "ref": f"admin/b{i}-{n}"}
            r = api.post("allocations", json=body)
            r.raise_for_status()
            held.append(r.json()["id"])
        crossed = time.monotonic()  # the second allocation exhausts the quota
        times.append(wait_mail(sink, "[FIRING:1] bench-quota", seen) - crossed)
        seen = len(sink.messages)
        for a in held:
            api.delete(f"allocations/{a}").raise_for_status()
        wait_mail(sink, "[RESOLVED] bench-quota", seen)
        time.sleep(interval)
    worst, target = max(times), 2 * interval
    print(
        f"(b) alert email after the threshold crossed, E = {interval:g} s: median {statistics.median(times):.2f} s,"
        f" worst {worst:.2f} s of {repeat} (target <= {target:g} s) ratio {target / worst:.2f}",
        flush=True,
    )


def scrape_times(url: str, headers: dict[str, str], node_url: str, api: httpx.Client, scrapes: int) -> tuple:
    """Seconds of each scrape of ours (each after a committed write) and of the node exporter's."""
    ours, theirs, size = [], [], 0
    with httpx.Client(timeout=30) as c:
        c.get(url, headers=headers).raise_for_status()
        c.get(node_url + "/metrics").raise_for_status()
        for i in range(scrapes):
            api.patch("vcs/bench", json={"description": f"scrape {i}"}).raise_for_status()
            t = time.perf_counter()
            r = c.get(url, headers=headers)
            ours.append(time.perf_counter() - t)
            r.raise_for_status()
            size = len(r.content)
            t = time.perf_counter()
            c.get(node_url + "/metrics")
            theirs.append(time.perf_counter() - t)
    return sorted(ours), sorted(theirs), size


def p99(values: list[float]) -> float:
    return values[min(len(values) - 1, int(0.99 * len(values)))]


def case_c(stack: Stack, api: httpx.Client, node_url: str, counts: list[int], scrapes: int) -> None:
    # as Prometheus scrapes it: the service's own port (not through the proxy), the scrape token
    url = f"http://127.0.0.1:{stack.service_port}/services/yitong/metrics"
    headers = {"Authorization": f"Bearer {(stack.data_dir / 'alerts' / 'scrape-token').read_text().strip()}"}
    made, parts, worst = 0, [], 0.0
    for count in sorted(counts):
        for i in range(made, count):
            name = f"v{i:04d}"
            vc = {"name": name, "quota": {"cpu": 1, "memory": "1Gi"}, "groups": ["bench"], "profiles": ["cpu"]}
            api.post("vcs", json=vc).raise_for_status()
            body = {"user": "admin", "vc": name, "profile": "cpu", "kind": "server", "ref": f"admin/c{i}"}
            api.post("allocations", json=body).raise_for_status()
        made = count
        ours, theirs, size = scrape_times(url, headers, node_url, api, scrapes)
        worst = p99(ours)
        parts.append(
            f"{count} VCs ({size // 1024} KiB): p50 {statistics.median(ours) * 1000:.1f} ms,"
            f" p99 {worst * 1000:.1f} ms (node exporter p50 {statistics.median(theirs) * 1000:.1f} ms)"
        )
    print(
        f"(c) /metrics scrape, {scrapes} each: {'; '.join(parts)}; target <= 50 ms ratio {0.05 / worst:.2f}", flush=True
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="E = 2 s, 3 runs of (b), 100 scrapes per VC count")
    p.add_argument("--interval", type=float, default=5.0, help="scrape and evaluation interval E, seconds")
    p.add_argument("--repeat", type=int, default=5, help="runs of (b)")
    p.add_argument("--vcs", default="20,200", help="VC counts (one allocation each) for (c), comma-separated")
    p.add_argument("--scrapes", type=int, default=500, help="scrapes of each exporter per VC count for (c)")
    p.add_argument("--cases", default="abc", help="cases to run, e.g. c")
    p.add_argument("--skip", default="", help="cases to skip, e.g. b")
    args = p.parse_args(argv)
    if args.quick:
        args.interval, args.repeat, args.scrapes = 2.0, 3, 100
    cases = set(args.cases) - set(args.skip)
    if "a" in cases:
        from ops_dashboard import case_a

        case_a(argparse.Namespace(quick=args.quick, nodes=500, jobs=5000, requests=200))
    from aiosmtpd.controller import Controller

    sink = Sink()
    smtp_port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=smtp_port)
    controller.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "yitong").mkdir()
            stack = Stack(Path(tmp) / "yitong", settings(args.interval, smtp_port), {"admin": secrets.token_hex(8)})
            stack.start()
            try:
                token = stack.token("admin")
                with stack.platform_client(token) as api:
                    status = wait_running(api)
                    if "b" in cases:
                        case_b(api, sink, args.interval, args.repeat)
                    if "c" in cases:
                        counts = [int(n) for n in args.vcs.split(",")]
                        case_c(stack, api, status["node_exporter"]["url"], counts, args.scrapes)
            except Exception:
                print(f"the platform's log (last lines):\n{stack.tail(80)}", file=sys.stderr)
                raise
            finally:
                stack.stop()
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
