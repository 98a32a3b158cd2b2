"""A 2-process DDP job through Yitong's local backend vs bare ``torchrun`` (issue 4, bench (c)).

    .venv/bin/python bench/jobs_ddp.py [--rounds 3] [--steps 300]

Yitong: a real hub + platform service (tests/stack.py); ``POST /jobs`` of a pytorch job with
``procs_per_node: 2`` (torchrun under the local runner, gloo on CPU). Bare: ``python -m
torch.distributed.run --standalone --nproc-per-node=2 train.py`` started with Popen. Both run
the same script with the same environment; rank 0 writes the wall-clock time of its first
completed step and of every step after it to a JSON file. Measured: submit (or Popen) -> first
step, and the steady step time (median over the steps after the first 20). Rounds alternate
which side goes first. Targets: <= 1 s added to submit -> first step, >= 0.98x steady throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from stack import Stack  # noqa: E402

TRAIN = """
import gc, json, os, sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
torch.set_num_threads(1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
    torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 256), torch.randn(64, 1)
stamps = []
for step in range(int(os.environ["BENCH_STEPS"])):
    opt.zero_grad()
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    opt.step()
    stamps.append(time.time())
if rank == 0:
    tmp = os.environ["BENCH_OUT"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(stamps, f)
    os.replace(tmp, os.environ["BENCH_OUT"])
del model, opt, loss  # the reducer holds the group: end it in destroy_process_group, not at exit
gc.collect()
dist.barrier()
dist.destroy_process_group()
"""


def result(out: Path, t0: float, timeout: float = 300) -> tuple[float, float]:
    deadline = time.monotonic() + timeout
    while not out.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no result in {out}")
        time.sleep(0.02)
    stamps = json.loads(out.read_text())
    steady = [b - a for a, b in zip(stamps[20:], stamps[21:])]
    return stamps[0] - t0, statistics.median(steady)


def bare(script: Path, out: Path, steps: int) -> tuple[float, float]:
    env = os.environ | {"BENCH_OUT": str(out), "BENCH_STEPS": str(steps), "OMP_NUM_THREADS": "1"}
    t0 = time.time()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nnodes=1",
            "--nproc-per-node=2",
            str(script),
        ],
        env=env,
        cwd=script.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    first, step = result(out, t0)
    proc.wait(120)
    return first, step


def ours(api, script: Path, out: Path, steps: int) -> tuple[float, float]:
    body = {
        "name": "ddp-bench",
        "vc": "bench",
        "environment": {"kernel": "python3"},
        "command": [sys.executable, str(script)],
        "framework": "pytorch",
        "procs_per_node": 2,
        "cpu": 2,
        "memory": "2Gi",
        "env": {"BENCH_OUT": str(out), "BENCH_STEPS": str(steps), "OMP_NUM_THREADS": "1"},
    }
    t0 = time.time()
    r = api.post("/jobs", json=body)
    r.raise_for_status()
    first, step = result(out, t0)
    job_id = r.json()["id"]
    deadline = time.monotonic() + 120
    while api.get(f"/jobs/{job_id}").json()["state"] not in ("succeeded", "failed", "cancelled"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} did not end")
        time.sleep(0.1)
    return first, step


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        script = tmp / "code" / "train.py"
        script.parent.mkdir()
        script.write_text(TRAIN)
        settings = {
            "backend": "local",
            "hub": {"admin_users": ["admin"]},
            "jobs": {"poll_interval": 1.0},
            "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.1, "memory": "512Mi"}},
            "vcs": {"bench": {"quota": {"cpu": 100, "memory": "100Gi"}, "groups": ["bench"], "profiles": ["cpu"]}},
            "groups": {"bench": ["admin"]},
        }
        (tmp / "yitong").mkdir()
        stack = Stack(tmp / "yitong", settings, {"admin": secrets.token_hex(8)}).start()
        try:
            api = stack.platform_client(stack.token("admin"))
            bare(script, tmp / "warm.json", 30)  # warm the page cache for torch
            rows = {"yitong": [], "bare": []}
            for i in range(args.rounds):
                order = ("yitong", "bare") if i % 2 == 0 else ("bare", "yitong")
                for side in order:
                    out = tmp / f"{side}-{i}.json"
                    rows[side].append(
                        ours(api, script, out, args.steps) if side == "yitong" else bare(script, out, args.steps)
                    )
            api.close()
        finally:
            stack.stop()
    first = {k: statistics.median(r[0] for r in v) for k, v in rows.items()}
    step = {k: statistics.median(r[1] for r in v) for k, v in rows.items()}
    added = first["yitong"] - first["bare"]
    throughput = step["bare"] / step["yitong"]
    print(f"(c) 2-process DDP (gloo, CPU), {args.rounds} rounds, median:")
    print(
        f"  submit -> first step   yitong {first['yitong']:.2f} s   bare torchrun {first['bare']:.2f} s   added {added:+.2f} s"
        f"  [target <= 1 s: {'met' if added <= 1 else 'NOT met'}]"
    )
    print(
        f"  steady step time       yitong {step['yitong'] * 1e3:.2f} ms  bare torchrun {step['bare'] * 1e3:.2f} ms"
        f"  throughput {throughput:.3f}x  [target >= 0.98x: {'met' if throughput >= 0.98 else 'NOT met'}]"
    )
    return {"first": first, "step": step, "added": added, "throughput": throughput, "rows": rows}


if __name__ == "__main__":
    main()
