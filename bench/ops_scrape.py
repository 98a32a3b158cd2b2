"""The exporter's scrape in process (a companion of ``bench/ops.py`` case (c)): the time the platform
service spends rendering one ``/metrics`` answer, without HTTP, the hub or the other processes.

    .venv/bin/python bench/ops_scrape.py [--vcs 20,200] [--scrapes 200]

A migrated SQLite database with N VCs holding an allocation each; before each timed rendering one
VC's quota changes in a committed write (so nothing is served from the read cache, and the changed
VC is rendered again), as between two Prometheus scrapes on a busy platform. Prints p50, p99 and
the fastest rendering per VC count. Run it with another checkout's ``services`` first on
``PYTHONPATH`` to time that one (it falls back to ``generate_latest`` where ``Metrics.render`` is
absent).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vcs", default="20,200", help="VC counts, comma-separated")
    p.add_argument("--scrapes", type=int, default=200, help="renderings per VC count")
    args = p.parse_args(argv)
    from prometheus_client import generate_latest

    from yitong_services.core.app import create_app
    from yitong_services.core.settings import Settings
    from yitong_services.vcs.models import VC, Allocation

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.model_validate(
            {
                "backend": "local",
                "data_dir": tmp,
                "service": {"reconcile_interval": 0},
                "profiles": {"cpu": {"cpu": 1, "memory": "64Mi"}},
                "vcs": {"bench": {"quota": {"cpu": 2, "memory": "1Gi"}, "profiles": ["cpu"]}},
            }
        )
        app = create_app(settings, hub_api_url="http://127.0.0.1:1/hub/api", hub_api_token="-", prefix="/y/")
        db = app.state.yitong.db
        metrics = next(m.kwargs["metrics"] for m in app.user_middleware if "metrics" in m.kwargs)
        render = getattr(metrics, "render", None) or (lambda: generate_latest(metrics.registry))
        made, parts = 0, []
        for count in sorted(int(n) for n in args.vcs.split(",")):
            with db.writing() as s:
                for i in range(made, count):
                    s.add(VC(name=f"v{i:04d}", quota={"cpu": 1, "memory": 2**30}, groups=[], profiles=["cpu"]))
                s.flush()
                for i in range(made, count):
                    resources = {"cpu": 1, "memory": 64 * 2**20}
                    s.add(
                        Allocation(
                            user="u", vc=f"v{i:04d}", profile="cpu", kind="server", ref=f"u/{i}", resources=resources
                        )
                    )
            made = count
            times = []
            for i in range(args.scrapes):
                with db.writing() as s:
                    s.query(VC).filter_by(name="v0000").update({"quota": {"cpu": 1 + i % 2, "memory": 2**30}})
                t = time.perf_counter()
                size = len(render())
                times.append(time.perf_counter() - t)
            times.sort()
            p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
            parts.append(
                f"{count} VCs ({size // 1024} KiB): p50 {statistics.median(times) * 1000:.1f} ms,"
                f" p99 {p99 * 1000:.1f} ms, fastest {times[0] * 1000:.1f} ms"
            )
        print(f"/metrics rendering in process, {args.scrapes} each: {'; '.join(parts)}", flush=True)


if __name__ == "__main__":
    main()
