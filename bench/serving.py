"""Model serving: a small scikit-learn model deployed on the embedded default, called through
the platform's endpoint route versus the same MLServer called directly, side by side in one run.

    .venv/bin/python bench/serving.py [--seconds 30] [--connections 16] [--deploys 3] [--quick] [--httpx-load]

MLServer runs from its own environment (`make mlserver`: .venv-mlserver). The load comes from
one asyncio process with ``--connections`` keep-alive connections, each sending V2 infer
requests (JSON, 1 row of 4 FP32) back to back for ``--seconds``; the same generator, connections
and body hit both targets, in ABBA order (half the seconds each run). The generator writes raw
HTTP/1.1 on keep-alive connections (the service's own loopback client,
yitong_services/core/loopback_http.py: about 0.2 ms of CPU a request); ``--httpx-load`` uses an
httpx AsyncClient instead, as figures before 2026-11 did (about 4 ms a request: on 2 cores the
generator then takes most of the CPU, and the ratio says more about it than about the route).
Cases (each line ends with ``ratio R``; above 1 we are ahead: for a throughput ours over the
peer's, for a time the peer's over ours):

  (a) throughput and p50/p99 latency: platform route vs MLServer direct
      goal: >= 0.8x MLServer's throughput, <= 2 ms added p99
  (b) deploy from click (POST /endpoints) to ready (GET says ready)   goal: <= 10 s
      (peer: the same MLServer started by hand on the same files, to its ready probe)
  (c) batch inference over ``--rows`` rows (1M; --quick 200k) of a CSV dataset: from
      ``POST .../batch`` to the job's end (queue, materialise, predict in chunks, upload and
      commit the predictions) vs a plain pandas loop (read_csv in the same chunks, predict,
      to_csv) started as a process in the same environment      goal: >= 0.8x its throughput

``--cases`` picks cases (default ``abc``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "extensions"))
from stack import Stack  # noqa: E402

MLSERVER_PY = ROOT / ".venv-mlserver" / "bin" / "python"
TRAIN = """
import sys, joblib, numpy as np
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(0)
x = rng.normal(size=(300, 4)).astype("float32")
joblib.dump(LogisticRegression(max_iter=500).fit(x, (x[:, 0] > 0).astype("int64")), sys.argv[1] + "/model.joblib")
"""
MAKE_CSV = """
import sys, numpy as np, pandas as pd
rows = int(sys.argv[2])
x = np.random.default_rng(1).normal(size=(rows, 4)).round(4)
frame = pd.DataFrame(x, columns=["a", "b", "c", "d"])
frame.insert(0, "id", np.arange(rows))
frame.to_csv(sys.argv[1], index=False)
"""
# the peer of (c): what a person writes without a platform
PANDAS_LOOP = """
import sys, joblib, pandas as pd
model = joblib.load(sys.argv[1])
first = True
with open(sys.argv[3], "w") as out:
    for frame in pd.read_csv(sys.argv[2], chunksize=int(sys.argv[4])):
        result = frame[["id"]].copy()
        result["prediction"] = model.predict(frame[["a", "b", "c", "d"]].to_numpy())
        result.to_csv(out, index=False, header=first)
        first = False
"""
CHUNK_ROWS = 100_000
BODY = json.dumps({"inputs": [{"name": "predict", "shape": [1, 4], "datatype": "FP32", "data": [0.5, 1.0, 2.0, -1.0]}]})


async def load(url: str, headers: dict[str, str], connections: int, seconds: float) -> tuple[list[float], float, int]:
    """(latencies, seconds taken, errors) of ``connections`` workers for ``seconds``, raw HTTP/1.1
    keep-alive requests (each worker holds one connection of the pool)."""
    from urllib.parse import urlsplit

    from yitong_services.core.loopback_http import LoopbackPool

    u = urlsplit(url)
    host, port, target = u.hostname or "127.0.0.1", u.port or 80, u.path
    pool = LoopbackPool(timeout=30, max_idle=connections)
    send_headers = headers | {"Content-Type": "application/json"}
    body = BODY.encode()
    latencies: list[float] = []
    errors = 0
    await asyncio.gather(*(pool.request(host, port, "POST", target, body, send_headers) for _ in range(connections)))
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal errors
        while time.perf_counter() < stop:
            t = time.perf_counter()
            r = await pool.request(host, port, "POST", target, body, send_headers)
            latencies.append(time.perf_counter() - t)
            if r.status != 200:
                errors += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    took = time.perf_counter() - start
    pool.close()
    return latencies, took, errors


async def httpx_load(
    url: str, headers: dict[str, str], connections: int, seconds: float
) -> tuple[list[float], float, int]:
    """As :func:`load`, from an httpx AsyncClient (``--httpx-load``)."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    latencies: list[float] = []
    errors = 0
    async with httpx.AsyncClient(
        limits=limits, timeout=30, headers=headers | {"Content-Type": "application/json"}
    ) as c:
        for _ in range(connections):  # warm every connection
            await c.post(url, content=BODY)
        stop = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < stop:
                t = time.perf_counter()
                r = await c.post(url, content=BODY)
                latencies.append(time.perf_counter() - t)
                if r.status_code != 200:
                    errors += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        took = time.perf_counter() - start
    return latencies, took, errors


def figures(runs: list[tuple[list[float], float, int]]) -> tuple[float, float, float, int]:
    """(requests/s, p50 ms, p99 ms, errors) over several runs."""
    latencies = [x for r in runs for x in r[0]]
    q = statistics.quantiles(latencies, n=100)
    return len(latencies) / sum(r[1] for r in runs), q[49] * 1000, q[98] * 1000, sum(r[2] for r in runs)


def wait_ready(get, timeout: float = 120) -> float:
    start = time.monotonic()
    while not get():
        if time.monotonic() - start > timeout:
            raise SystemExit("not ready in time")
        time.sleep(0.05)
    return time.monotonic() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--deploys", type=int, default=3)
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the batch inference case (c)")
    p.add_argument("--cases", default="abc", help="which cases to run (letters)")
    p.add_argument("--verbose", action="store_true", help="(c): each job's times and log")
    p.add_argument("--quick", action="store_true", help="10 s of load, one deploy, 200k rows")
    p.add_argument("--httpx-load", action="store_true", help="(a): load from httpx, not raw HTTP/1.1")
    args = p.parse_args()
    if args.quick:
        args.seconds, args.deploys, args.rows = 10, 1, min(args.rows, 200_000)
    if not MLSERVER_PY.exists():
        subprocess.run(["make", "mlserver"], cwd=ROOT, check=True)
    work = Path(tempfile.mkdtemp(prefix="yt-bench-serving-"))
    settings = {
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        "profiles": {"cpu-small": {"cpu": 1, "memory": "1Gi"}},
        "vcs": {"bench": {"quota": {"cpu": 4, "memory": "8Gi"}, "groups": ["bench"], "profiles": ["cpu-small"]}},
        "groups": {"bench": ["admin"]},
    }
    (work / "stack").mkdir()
    (work / "model").mkdir()
    subprocess.run([MLSERVER_PY, "-c", TRAIN, str(work / "model")], check=True)
    stack = Stack(work / "stack", settings, {"admin": secrets.token_hex(8)})
    stack.start()
    try:
        from yitong_lab.client import Client
        from yitong_lab.models.sdk import Models

        token = stack.token("admin")
        auth = {"Authorization": f"token {token}"}
        with Client(stack.platform_direct, token) as c:
            signature = {"inputs": [{"name": "predict", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}
            Models(c).register("bench/small", work / "model", framework="sklearn", signature=signature, progress=None)
            if "a" in args.cases or "b" in args.cases:
                serving(args, stack, c, auth, work)
            if "c" in args.cases:
                batch_case(args, c, work)
    finally:
        stack.stop()
    return 0


def batch_case(args, c, work: Path) -> None:
    """(c): the platform's batch inference job vs a plain pandas loop on the same rows, in ABBA
    order (drift on a shared machine cancels out), each twice."""
    from yitong_lab.datasets.sdk import Datasets
    from yitong_lab.models.sdk import Models

    data = work / "rows"
    data.mkdir()
    subprocess.run([MLSERVER_PY, "-c", MAKE_CSV, str(data / "rows.csv"), str(args.rows)], check=True)
    Datasets(c).commit(data, "bench/rows", progress=None)
    times: dict[str, list[float]] = {"ours": [], "peer": []}
    for who in ("ours", "peer", "peer", "ours"):
        t = time.monotonic()
        if who == "ours":  # a fresh output dataset each time: the same work, a new version
            output = f"bench/rows-preds-{len(times['ours'])}"
            b = Models(c).batch("bench/small@1", "bench/rows@1", output, keep=["id"], chunk_rows=CHUNK_ROWS)
            b = Models(c).batch_wait(b["job"], 1800)
            if b["state"] != "succeeded":
                raise SystemExit(f"(c) batch job {b['job']} {b['state']}: {b['reason']}")
            if args.verbose:
                j = c.request("GET", f"/jobs/{b['job']}")
                print({k: j[k] for k in ("created", "admitted", "started", "finished")})
                print(c.http().get(f"{c.url}/jobs/{b['job']}/logs").text, flush=True)
        else:
            model, peer_out = str(work / "model" / "model.joblib"), str(work / "peer.csv")
            argv = [MLSERVER_PY, "-c", PANDAS_LOOP, model, str(data / "rows.csv"), peer_out, str(CHUNK_ROWS)]
            subprocess.run(argv, check=True)
        times[who].append(time.monotonic() - t)
    ours, peer = sum(times["ours"]) / 2, sum(times["peer"]) / 2
    each = ", ".join(f"{x:.1f}" for x in times["ours"]), ", ".join(f"{x:.1f}" for x in times["peer"])
    print(
        f"(c) batch inference, {args.rows} rows x 4 features, chunks of {CHUNK_ROWS}: platform job {ours:.1f} s "
        f"({args.rows / ours:,.0f} rows/s; runs {each[0]} s: queue, materialise, predict, upload, commit); "
        f"pandas loop {peer:.1f} s ({args.rows / peer:,.0f} rows/s; runs {each[1]} s); goal >= 0.8x throughput; "
        f"ratio {peer / ours:.2f}"
    )


def serving(args, stack, c, auth: dict[str, str], work: Path) -> None:
    """(a) and (b)."""
    from yitong_lab.models.sdk import Endpoints

    ready: list[float] = []
    for i in range(args.deploys):
        name = f"small{i}"
        t = time.monotonic()
        Endpoints(c).create(name, "bench/small@1", "cpu-small")
        wait_ready(lambda n=name: Endpoints(c).get(n)["state"] == "ready")
        ready.append(time.monotonic() - t)
        if i < args.deploys - 1:
            Endpoints(c).delete(name)
    name = f"small{args.deploys - 1}"
    [endpoint_dir] = (stack.data_dir / "endpoints" / name).glob("v1-*")  # its one replica's directory
    # the peer for (a) and (b): the same MLServer on the same files, started by hand with `mlserver
    # start` on a loopback port (the replica itself serves on a unix socket only the platform calls)
    from helpers import free_port

    peer_dir = work / "peer"
    subprocess.run(["cp", "-r", str(endpoint_dir), str(peer_dir)], check=True)
    peer_port = free_port()
    (peer_dir / "settings.json").write_text(
        json.dumps(json.loads((peer_dir / "settings.json").read_text()) | {"http_port": peer_port})
    )
    ms = json.loads((peer_dir / "model-settings.json").read_text())
    ms["parameters"]["uri"] = str(peer_dir / "model" / Path(ms["parameters"]["uri"]).name)
    (peer_dir / "model-settings.json").write_text(json.dumps(ms))
    t = time.monotonic()
    peer = subprocess.Popen(
        [str(ROOT / ".venv-mlserver/bin/mlserver"), "start", str(peer_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

    def peer_ready() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{peer_port}/v2/health/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    peer_ready_s = wait_ready(peer_ready)

    ours_url = f"{stack.platform_direct}/endpoints/{name}/v2/models/{name}/infer"
    direct_url = f"http://127.0.0.1:{peer_port}/v2/models/{name}/infer"
    half = args.seconds / 2
    runs: dict[str, list] = {"ours": [], "direct": []}
    try:
        for who in ("ours", "direct", "direct", "ours"):  # ABBA: drift on a shared machine cancels out
            url, headers = (ours_url, auth) if who == "ours" else (direct_url, {})
            generate = httpx_load if args.httpx_load else load
            runs[who].append(asyncio.run(generate(url, headers, args.connections, half)))
    finally:
        peer.terminate()
        peer.wait()
    ours, direct = figures(runs["ours"]), figures(runs["direct"])
    Endpoints(c).delete(name)
    b_ours = statistics.median(ready)
    print(
        f"(a) {args.connections} connections ({'httpx' if args.httpx_load else 'raw HTTP/1.1'}), {args.seconds:g} s, "
        f"1x4 FP32 sklearn: platform {ours[0]:.0f} req/s "
        f"p50 {ours[1]:.1f} ms p99 {ours[2]:.1f} ms ({ours[3]} errors); MLServer direct {direct[0]:.0f} req/s "
        f"p50 {direct[1]:.1f} ms p99 {direct[2]:.1f} ms; added p99 {ours[2] - direct[2]:+.1f} ms; "
        f"goal >= 0.8x throughput; ratio {ours[0] / direct[0]:.2f} (throughput ours/peer: above 1 we are ahead)"
    )
    print(
        f"(b) deploy click-to-ready: median {b_ours:.1f} s of {args.deploys} (goal <= 10 s); MLServer started by "
        f"hand on the same files {peer_ready_s:.1f} s; ratio {peer_ready_s / b_ours:.2f}"
    )


if __name__ == "__main__":
    sys.exit(main())
