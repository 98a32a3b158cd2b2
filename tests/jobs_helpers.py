"""Helpers for the job tests: tiny ``python -c`` jobs, a 2-process DDP program, waiting for states,
and whether a usable Slurm is running here."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time

PY = sys.executable
TERMINAL = {"succeeded", "failed", "cancelled", "preempted"}

# a tiny DistributedDataParallel run (gloo, CPU): each rank prints its loss; rank 0 saves the model
# into the outputs and POSTs metrics with the job's token
DDP = """
import gc, json, os, urllib.request
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    opt.zero_grad(); loss = model(torch.randn(8, 4)).pow(2).mean(); loss.backward(); opt.step()
print(f"rank {rank} of {world} loss {loss.item():.4f}", flush=True)
if rank == 0:
    torch.save(model.state_dict(), os.path.join(os.environ["YITONG_OUTPUT_DIR"], "model.pt"))
    req = urllib.request.Request(os.environ["YITONG_API_URL"] + f"/jobs/{os.environ['YITONG_JOB_ID']}/metrics",
        data=json.dumps({"loss": loss.item(), "world": world}).encode(), method="POST",
        headers={"Authorization": "token " + os.environ["YITONG_JOB_TOKEN"], "Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
# the usual shutdown: free the DDP model (its reducer holds the process group) while the group is
# whole, so the group ends inside destroy_process_group and not in interpreter teardown, where
# torch 2.13's gloo threads abort the process now and then ("terminate called without an active
# exception", about 1 run in 100 here); then no rank tears the group down while another still works
del model, opt, loss
gc.collect()
dist.barrier()
dist.destroy_process_group()
"""


def slurm_partition() -> str | None:
    """The first partition with a usable node (``sinfo``), None when Slurm is absent or down."""
    if not shutil.which("sinfo"):
        return None
    try:
        r = subprocess.run(["sinfo", "-h", "-o", "%R %t"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None
    for line in r.stdout.splitlines() if r.returncode == 0 else []:
        name, _, state = line.partition(" ")
        if any(s in state for s in ("idle", "mix", "alloc")):
            return name
    return None


def py_job(name: str, vc: str, program: str, **extra) -> dict:
    return {
        "name": name,
        "vc": vc,
        "environment": {"kernel": "python3"},
        "command": [PY, "-c", program],
        "cpu": extra.pop("cpu", 1),
        "memory": extra.pop("memory", "64Mi"),
        **extra,
    }


async def wait_state(svc, who: str, job_id: int, states=TERMINAL, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        r = await svc.call(who, "GET", f"jobs/{job_id}")
        assert r.status_code == 200, r.text
        if r.json()["state"] in states:
            return r.json()
        assert time.monotonic() < deadline, f"job {job_id} stayed {r.json()['state']}: {r.json()['reason']}"
        await asyncio.sleep(0.1)
