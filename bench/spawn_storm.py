"""Spawn storms: N users press Start at the same moment, on Yitong and on a bare JupyterHub.

    .venv/bin/python bench/spawn_storm.py [--users 20 50]

Both hubs use LocalProcessSpawner-started `jupyterhub-singleuser` processes on this machine and
the same timeouts (start 120 s, HTTP 60 s: Yitong's defaults); they run one after the other, not
at once. Each storm is N threads posting `POST /hub/api/users/NAME/server` together, then
polling until every server is ready or gone, for at most --limit seconds. A line per storm:

    (c) spawn storm, 20 users: bare 35.5 s (20/20 ready), yitong 30.1 s (20/20 ready) ... ratio 1.18

The ratio is the bare hub's time until all were ready over Yitong's (above 1 Yitong is ahead);
a server that never became ready counts as the whole --limit, so then the ratio is a lower bound
(printed ">="). It also prints whether anyone in Yitong's queue waited longer than the median
single start time multiplied by their position (the issue's fairness bound).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spawn import BareHub
from stack import Stack

TIMEOUTS = "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 60\n"


@dataclass
class Storm:
    users: int
    ready: int
    failed: int
    seconds: float  # until the last became ready (or the limit when some never did)
    ready_at: list[float]  # each ready server's time since the storm began, sorted


def storm(api: str, token: str, users: list[str], options: dict, limit: float) -> Storm:
    headers = {"Authorization": f"token {token}"}
    with httpx.Client(base_url=api, headers=headers, timeout=limit) as hub:
        for user in users:
            hub.post(f"/users/{user}")  # users exist before the storm (409 when they already do)
    barrier = threading.Barrier(len(users))
    t0 = 0.0

    def press_start(user: str) -> tuple[str, float | None]:
        nonlocal t0
        with httpx.Client(base_url=api, headers=headers, timeout=limit) as hub:
            if barrier.wait() == 0:
                t0 = time.perf_counter()
            r = hub.post(f"/users/{user}/server", json=options)
            if r.status_code not in (201, 202):
                return user, None
            deadline = time.perf_counter() + limit
            while time.perf_counter() < deadline:
                server = hub.get(f"/users/{user}").json()["servers"].get("")
                if not server:
                    return user, None
                if server.get("ready"):
                    return user, time.perf_counter()
                time.sleep(0.25)
            return user, None

    with ThreadPoolExecutor(len(users)) as pool:
        results = list(pool.map(press_start, users))
    ready_at = sorted(t - t0 for _, t in results if t is not None)
    failed = len(users) - len(ready_at)
    seconds = limit if failed else max(ready_at)
    with httpx.Client(base_url=api, headers=headers, timeout=120) as hub:
        for user in users:
            hub.delete(f"/users/{user}/server")
        deadline = time.perf_counter() + 180
        while time.perf_counter() < deadline and any(hub.get(f"/users/{u}").json()["servers"] for u in users):
            time.sleep(0.5)
    return Storm(len(users), len(ready_at), failed, seconds, ready_at)


def single_start(api: str, token: str, user: str, options: dict) -> float:
    return storm(api, token, [user], options, 120).seconds


def fairness(result: Storm, one: float) -> str:
    """The k-th ready server waited at most k x one start (k from 1)."""
    worst = max((t / (k * one) for k, t in enumerate(result.ready_at, 1)), default=0.0)
    return f"worst wait {worst:.2f}x position x single start ({'within' if worst <= 1 else 'beyond'} the bound)"


def settings_for(users: list[str]) -> dict:
    return {
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.1, "memory": "256Mi"}},
        "vcs": {"storm": {"quota": {"cpu": 100, "memory": "100Gi"}, "groups": ["storm"], "profiles": ["cpu"]}},
        "groups": {"storm": users},
    }


def run(sizes: list[int], limit: float, letters: str = "cd") -> list[str]:
    lines = []
    users = [f"s{i}" for i in range(max(sizes))]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bare").mkdir()
        (root / "yitong").mkdir()
        yitong = Stack(root / "yitong", settings_for(users), {"admin": secrets.token_hex(8)}).start()
        bare = BareHub(root / "bare", extra_config=TIMEOUTS)
        try:
            token = yitong.token("admin")
            ours_one = statistics.median(
                single_start(yitong.api, token, "s0", {"vc": "storm", "profile": "cpu"}) for _ in range(3)
            )
            for letter, n in zip(letters, sizes):
                theirs = storm(bare.api, bare.token, users[:n], {}, limit)
                ours = storm(yitong.api, token, users[:n], {"vc": "storm", "profile": "cpu"}, limit)
                bound = ">=" if theirs.failed and not ours.failed else ""
                line = (
                    f"({letter}) spawn storm, {n} users at once: bare JupyterHub {theirs.seconds:.1f} s "
                    f"({theirs.ready}/{n} ready, {theirs.failed} failed), Yitong {ours.seconds:.1f} s "
                    f"({ours.ready}/{n} ready, {ours.failed} failed); single start {ours_one:.1f} s, "
                    f"{fairness(ours, ours_one)}; ratio {bound}{theirs.seconds / ours.seconds:.2f}"
                )
                print(line, flush=True)
                lines.append(line)
        finally:
            bare.stop()
            yitong.stop()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--limit", type=float, default=300, help="seconds a storm may take at most")
    args = parser.parse_args()
    run(args.users, args.limit)


if __name__ == "__main__":
    main()
