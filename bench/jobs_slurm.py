"""Job throughput on Slurm: n no-op jobs through Yitong (REST -> platform service -> Slurm runner)
versus a bare `sbatch --wrap true` loop, in the same run on the same Slurm.

    .venv/bin/python bench/jobs_slurm.py [--jobs 200] [--rounds 3] [--poll-interval 1.0]

Yitong: the whole embedded platform (hub, proxy, platform service with `backend: slurm`) runs as
in production; a client POSTs n jobs (`command: ["true"]`, the smallest cpu and memory a spec
allows: 0.001 cpu -> one Slurm CPU, 1Mi) through the hub's proxy, 16 at a time, and lists the
VC's jobs every 0.25 s (and asks squeue about their Slurm ids). Bare: a loop of `sbatch --wrap true`
with the same CPU, memory and partition, then `squeue -t all` every 0.25 s. Both are timed from the
first submit until

  posted:   the client's submits are answered (Yitong: POST /jobs -> 201, the job is queued in
            Yitong; bare: the sbatch loop returned)
  accepted: Slurm holds every job (Yitong: each job is running or ended, i.e. its sbatch
            returned; bare: as posted)
  started:  squeue shows every job past PENDING, or gone
  done:     every job ended (Yitong: succeeded, seen through the API; bare: squeue)

and the ratios bare/yitong are printed (above 1: Yitong was faster); with --rounds, the sides
alternate which goes first and the medians are compared. Slurm runs at most
MaxJobCount jobs it remembers; finished jobs stay MinJobAge seconds: the run checks n fits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from jobs_helpers import slurm_partition  # noqa: E402
from stack import Stack  # noqa: E402

ENDED = {"succeeded", "failed", "cancelled", "preempted"}
SLURM_ENDED = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
}
CONCURRENCY = 16
POLL = 0.25  # seconds between the client's looks (API list, squeue), the same for both sides
PHASES = {  # phase -> what it means (both sides are timed from their first submit)
    "posted": "client submits answered",  # yitong: POST /jobs answered; bare: sbatch returned
    "accepted": "all accepted by sbatch",  # yitong: every job running or ended (its sbatch returned)
    "started": "all started in Slurm (squeue)",
    "done": "all ended",
}


def slurm_config() -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    return {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in out.splitlines()) if v}


def check_capacity(n: int) -> None:
    conf = slurm_config()
    max_jobs = int(conf.get("MaxJobCount", "10000"))
    if 2 * n > max_jobs:  # both sides' jobs may be remembered at once (MinJobAge)
        raise SystemExit(f"--jobs {n}: 2 x {n} jobs exceed Slurm's MaxJobCount={max_jobs}")
    print(f"Slurm: MaxJobCount={max_jobs}, MinJobAge={conf.get('MinJobAge')}", flush=True)


def squeue_states(ids: list[str]) -> dict[str, str]:
    r = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i %T"], capture_output=True, text=True
    )
    return dict(line.split(None, 1) for line in r.stdout.splitlines() if " " in line)


def slurm_started(states: dict[str, str], ids: list[str]) -> bool:
    return all(states.get(i, "gone") not in ("PENDING", "CONFIGURING") for i in ids)


def bare(n: int, partition: str, work: Path) -> dict[str, float]:
    """A plain sbatch loop, then squeue until every job started and until every job ended."""
    out = work / "bare"
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    ids = []
    for _ in range(n):
        r = subprocess.run(
            [
                "sbatch",
                "--parsable",
                f"--partition={partition}",
                "--job-name=bare-noop",
                "--cpus-per-task=1",
                "--mem=1M",
                f"--output={out}/slurm-%j.out",
                "--wrap",
                "true",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        ids.append(r.stdout.strip().split(";")[0])
    accepted = time.perf_counter() - t0
    started = None
    while True:
        states = squeue_states(ids)
        if started is None and slurm_started(states, ids):
            started = time.perf_counter() - t0
        if all(states.get(i, "gone") in SLURM_ENDED | {"gone"} for i in ids):
            done = time.perf_counter() - t0
            return {"posted": accepted, "accepted": accepted, "started": started or done, "done": done}
        time.sleep(POLL)


async def yitong(n: int, stack: Stack, token: str) -> dict[str, float]:
    """n concurrent POST /jobs through the proxy, then GET /jobs (and squeue on the jobs' Slurm ids)
    until all are accepted by sbatch, all started and all ended."""
    body = {
        "name": "noop",
        "vc": "bench",
        "environment": {"kernel": "python3"},
        "command": ["true"],
        "cpu": "1m",
        "memory": "1Mi",
    }
    gate = asyncio.Semaphore(CONCURRENCY)
    async with httpx.AsyncClient(
        base_url=stack.platform, headers={"Authorization": f"token {token}"}, timeout=120
    ) as api:

        async def post() -> int:
            async with gate:
                r = await api.post("/jobs", json=body)
                r.raise_for_status()
                return r.json()["id"]

        t0 = time.perf_counter()
        ids = set(await asyncio.gather(*(post() for _ in range(n))))
        posted = time.perf_counter() - t0
        accepted = started = None
        while True:
            r = await api.get("/jobs", params={"vc": "bench"})
            r.raise_for_status()
            jobs = {j["id"]: j for j in r.json() if j["id"] in ids}
            states = {i: j["state"] for i, j in jobs.items()}
            if accepted is None and len(states) == n and all(s in ENDED | {"running"} for s in states.values()):
                accepted = time.perf_counter() - t0
            if accepted is not None and started is None:
                slurm_ids = [j["backend_ref"].split(":", 1)[0] for j in jobs.values()]
                if slurm_started(await asyncio.to_thread(squeue_states, slurm_ids), slurm_ids):
                    started = time.perf_counter() - t0
            if len(states) == n and all(s in ENDED for s in states.values()):
                bad = [j for j, s in states.items() if s != "succeeded"]
                if bad:
                    raise RuntimeError(f"{len(bad)} Yitong jobs did not succeed, e.g. job {bad[0]}")
                done = time.perf_counter() - t0
                return {"posted": posted, "accepted": accepted or done, "started": started or done, "done": done}
            await asyncio.sleep(POLL)


def wait_idle(partition: str, timeout: float = 300) -> None:
    """Until no job of this run is left in the partition (the other side's must not compete)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = subprocess.run(["squeue", "-h", "-p", partition, "-o", "%j"], capture_output=True, text=True)
        if not any(name.startswith(("bare-noop", "yt-")) for name in r.stdout.split()):
            return
        time.sleep(0.5)
    raise TimeoutError("Slurm still runs jobs of an earlier round")


def run_slurm_bench(n: int, poll_interval: float = 1.0, work: Path | None = None, rounds: int = 1) -> dict:
    """Run both sides ``rounds`` times (alternating which goes first); the median seconds per phase
    and the ratios bare/yitong of those medians."""
    if not shutil.which("sbatch"):
        raise SystemExit("no sbatch on PATH: this benchmark needs a running Slurm")
    partition = slurm_partition()
    if partition is None:
        raise SystemExit("sinfo shows no usable Slurm node")
    check_capacity(n)
    tmp = Path(work or tempfile.mkdtemp(prefix="yt-bench-slurm-"))
    tmp.mkdir(parents=True, exist_ok=True)
    settings = {
        "backend": "slurm",
        "hub": {"admin_users": ["admin"]},
        "backends": {"slurm": {"partition": partition}},
        "jobs": {"poll_interval": poll_interval},
        "vcs": {"bench": {"quota": {"cpu": 100_000, "memory": "100Ti"}, "groups": ["bench"], "profiles": []}},
        "groups": {"bench": ["admin"]},
    }
    (tmp / "stack").mkdir(exist_ok=True)
    stack = Stack(tmp / "stack", settings, {"admin": secrets.token_hex(8)})
    stack.start()
    ours, theirs = [], []
    try:
        token = stack.token("admin")
        for r in range(rounds):
            for side in ("bare", "yitong") if r % 2 == 0 else ("yitong", "bare"):
                wait_idle(partition)
                print(f"round {r + 1}: {side}, {n} jobs ...", flush=True)
                if side == "bare":
                    theirs.append(bare(n, partition, tmp / f"round-{r}"))
                else:
                    ours.append(asyncio.run(yitong(n, stack, token)))
    finally:
        stack.stop()
        if work is None:
            shutil.rmtree(tmp, ignore_errors=True)
    result: dict = {"jobs": n, "rounds": rounds, "poll_interval": poll_interval}
    for phase in PHASES:
        a, b = statistics.median(o[phase] for o in ours), statistics.median(t[phase] for t in theirs)
        result[f"yitong_{phase}_s"], result[f"bare_{phase}_s"] = round(a, 3), round(b, 3)
        result[f"ratio_{phase}"] = round(b / a, 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=1.0,
        help="jobs.poll_interval of the service (default 1.0, the settings default)",
    )
    parser.add_argument(
        "--work", type=Path, default=None, help="scratch directory, kept (default: a temp dir, removed)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds of both sides (medians are reported)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON too")
    args = parser.parse_args()
    r = run_slurm_bench(args.jobs, args.poll_interval, args.work, args.rounds)
    print(f"\n{args.jobs} no-op jobs on Slurm, median of {args.rounds}{'':1} {'yitong':>9} {'bare':>9} {'bare/yt':>8}")
    for phase, what in PHASES.items():
        print(f"{what:34} {r[f'yitong_{phase}_s']:8.2f}s {r[f'bare_{phase}_s']:8.2f}s {r[f'ratio_{phase}']:7.2f}x")
    if args.json:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
