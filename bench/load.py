"""API throughput at load: the hub's ``GET /hub/api/user`` versus the platform's job-status
endpoints, both through the same proxy of one real stack (issue "at load").

    .venv/bin/python bench/load.py [--clients 200] [--seconds 10] [--quick]

A real hub + proxy + platform service start (tests/stack.py) with one VC whose group holds every
client. Each of ``--clients`` concurrent clients (httpx async on loopback, each with its own hub
token) polls in a loop for ``--seconds``: the hub case calls ``GET /hub/api/user``; the platform
case calls ``GET /jobs?limit=20`` then ``GET /jobs/{id}`` of one job from that page (two requests,
both counted). Cases: (a) 20 jobs in the VC, (b) 10,000 jobs in the VC (inserted through the
domain layer, ``records.create``, not by HTTP; 100 left queued so positions matter, the rest
marked finished). The job manager is off, so the figures are the API's alone.

Each line prints requests/s and p50/p99 latency of both, then ``throughput ours/hub`` (above 1
we serve more) and ``p99 hub/ours`` (above 1 our tail is shorter), as docs/benchmarks.md does
for throughput and time. Target: throughput >= 0.8 and p99 hub/ours >= 0.67 (p99 <= 1.5x).
``--quick``: 50 clients, 4 s per case, 2,000 jobs in (b): well under 10 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from sqlalchemy import update

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from stack import Stack  # noqa: E402

VC_NAME = "load"


def settings(users: list[str], service: dict | None = None, database: str | None = None) -> dict:
    return {
        **({"database": {"url": database}} if database else {}),
        "service": service or {},
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        "jobs": {"enabled": False},
        "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.1, "memory": "512Mi"}},
        "vcs": {VC_NAME: {"quota": {"cpu": 1000, "memory": "1000Gi"}, "groups": [VC_NAME], "profiles": ["cpu"]}},
        "groups": {VC_NAME: users},
    }


def tokens_for(stack: Stack, users: list[str]) -> dict[str, str]:
    """One hub token per user, made with the admin's token (users exist: settings made them)."""
    admin = stack.token("admin")
    out = {}
    with stack.hub(admin) as hub:
        hub.post("/users", json={"usernames": users})
        for name in users:
            r = hub.post(f"/users/{name}/tokens", json={"note": "load bench", "expires_in": 3600})
            r.raise_for_status()
            out[name] = r.json()["token"]
    return out


def wipe(url: str) -> None:
    """Drop every table of the PostgreSQL database at ``url`` (``--database``: one the bench may empty)."""
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(url)
    with engine.begin() as conn:
        for table in inspect(conn).get_table_names():
            conn.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    engine.dispose()


def add_jobs(stack: Stack, owner: str, count: int, queued: int = 100, database: str | None = None) -> None:
    """``count`` jobs of ``owner`` in the VC through the domain layer; all but ``queued`` finished."""
    from yitong_services.core.authz import Person
    from yitong_services.core.db import Database
    from yitong_services.jobs import records, states
    from yitong_services.jobs.models import Job
    from yitong_services.jobs.spec import spec_from_dict

    db = Database(database or f"sqlite:///{stack.data_dir / 'yitong.sqlite'}")
    person = Person(name=owner, groups=(VC_NAME,))
    inventory = {"cpu": 1e6, "memory": 2**60}
    with db.session() as s, s.begin():
        for i in range(count):
            spec = spec_from_dict(
                {"name": f"noop-{i}", "vc": VC_NAME, "environment": {"kernel": "python3"}, "command": ["true"]}
            )
            records.create(s, person, spec, {}, inventory, "local")
    with db.session() as s, s.begin():
        ids = sorted(s.scalars(Job.__table__.select().with_only_columns(Job.id)).all())
        done = ids[: max(0, len(ids) - queued)]
        if done:
            s.execute(update(Job).where(Job.id.in_(done)).values(state=states.SUCCEEDED, exit_code=0))
    db.dispose()


async def poll(
    clients: dict[str, httpx.AsyncClient], one: Callable[[httpx.AsyncClient], Awaitable[int]], seconds: float
) -> tuple[float, list[float], int]:
    """Every client calls ``one`` in a loop for ``seconds`` -> (req/s, latencies, errors)."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def loop(client: httpx.AsyncClient) -> None:
        nonlocal errors
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            try:
                n = await one(client)
            except httpx.HTTPError as e:
                errors += 1
                if errors == 1:
                    detail = e.response.text[:200] if isinstance(e, httpx.HTTPStatusError) else ""
                    print(f"  first error: {type(e).__name__}: {e} {detail}", flush=True)
                continue
            # a pair of requests counts twice, each with half the pair's time
            latencies.extend([(time.perf_counter() - t0) / n] * n)

    t0 = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in clients.values()))
    return len(latencies) / (time.perf_counter() - t0), latencies, errors


async def hub_user(client: httpx.AsyncClient) -> int:
    r = await client.get("/hub/api/user")
    r.raise_for_status()
    return 1


async def job_status(client: httpx.AsyncClient) -> int:
    r = await client.get("/services/yitong/api/v1/jobs", params={"limit": 20})
    r.raise_for_status()
    jobs = r.json()
    r = await client.get(f"/services/yitong/api/v1/jobs/{jobs[len(jobs) // 2]['id']}")
    r.raise_for_status()
    return 2


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else float("nan")


async def case(stack: Stack, tokens: dict[str, str], label: str, seconds: float) -> dict:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    clients = {
        n: httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"token {t}"}, timeout=60, limits=limits)
        for n, t in tokens.items()
    }
    try:
        await poll(clients, hub_user, 1.0)  # warm connections and caches, untimed
        await poll(clients, job_status, 1.0)
        hub_rps, hub_lat, hub_err = await poll(clients, hub_user, seconds)
        our_rps, our_lat, our_err = await poll(clients, job_status, seconds)
    finally:
        await asyncio.gather(*(c.aclose() for c in clients.values()))
    out = {
        "hub_rps": hub_rps,
        "hub_p50": pct(hub_lat, 50),
        "hub_p99": pct(hub_lat, 99),
        "our_rps": our_rps,
        "our_p50": pct(our_lat, 50),
        "our_p99": pct(our_lat, 99),
        "errors": hub_err + our_err,
    }
    print(
        f"{label} hub {hub_rps:.0f} req/s p50 {out['hub_p50']:.0f} ms p99 {out['hub_p99']:.0f} ms,"
        f" yitong {our_rps:.0f} req/s p50 {out['our_p50']:.0f} ms p99 {out['our_p99']:.0f} ms,"
        f" throughput ours/hub {our_rps / hub_rps:.2f}, p99 hub/ours {out['hub_p99'] / out['our_p99']:.2f}"
        f" (errors {out['errors']})",
        flush=True,
    )
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--jobs", type=int, default=10_000, help="jobs in the VC for case (b)")
    p.add_argument("--quick", action="store_true", help="50 clients, 4 s per case, 2,000 jobs")
    p.add_argument("--threads", type=int, help="the service's thread pool (service.threads)")
    p.add_argument("--hub-cache", type=float, help="seconds the service caches the hub's answers")
    p.add_argument(
        "--database",
        help="a PostgreSQL URL (postgresql+psycopg://...) of a database the bench may empty; default: SQLite",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.clients, args.seconds, args.jobs = min(args.clients, 50), 4.0, min(args.jobs, 2000)
    if not 1 <= args.clients <= 1000 or not 0 < args.seconds <= 120 or not 20 <= args.jobs <= 100_000:
        p.error("--clients 1..1000, --seconds up to 120, --jobs 20..100000")
    users = [f"load{i}" for i in range(args.clients)]
    results = {}
    with tempfile.TemporaryDirectory(prefix="yt-bench-load-") as tmp:
        service = {k: v for k, v in (("threads", args.threads), ("hub_cache_seconds", args.hub_cache)) if v is not None}
        if args.database:
            wipe(args.database)
        stack = Stack(Path(tmp), settings(users, service, args.database), {"admin": secrets.token_hex(8)})
        stack.start()
        try:
            tokens = tokens_for(stack, users)
            add_jobs(stack, users[0], 20, queued=5, database=args.database)
            results["a"] = asyncio.run(case(stack, tokens, f"(a) {args.clients} clients, 20 jobs:", args.seconds))
            add_jobs(stack, users[0], args.jobs - 20, database=args.database)
            results["b"] = asyncio.run(
                case(stack, tokens, f"(b) {args.clients} clients, {args.jobs} jobs:", args.seconds)
            )
        finally:
            stack.stop()
    for key, r in results.items():
        met = r["our_rps"] >= 0.8 * r["hub_rps"] and r["our_p99"] <= 1.5 * r["hub_p99"]
        print(f"({key}) target throughput >= 0.8x and p99 <= 1.5x the hub's: {'met' if met else 'NOT met'}")
    return results


if __name__ == "__main__":
    main()
