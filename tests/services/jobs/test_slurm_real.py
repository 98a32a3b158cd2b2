"""The batch script on a real Slurm (slurmctld/slurmd from Debian packages, started by .ci/run):
hostile argv and env values arrive unchanged and nothing in them runs; the rank log and the exit
record land in the attempt directory."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from helpers import require

from yitong_services.jobs.slurm import batch_script
from yitong_services.jobs.spec import spec_from_dict

PROBE = (
    "import os, sys; print(repr(sys.argv[1:])); print(repr(os.environ['EVIL']));"
    " print(os.environ['YITONG_NODE_RANK'], os.environ['YITONG_MASTER_ADDR'] != '', os.environ['YITONG_JOB_ID'])"
)


def slurm_works() -> bool:
    if not shutil.which("sinfo"):
        return False
    r = subprocess.run(["sinfo", "-h", "-o", "%a %t"], capture_output=True, text=True, timeout=20)
    return r.returncode == 0 and any(s in r.stdout for s in ("idle", "mix", "alloc"))


@pytest.mark.slurm
def test_batch_script_runs_inert(tmp_path):
    require("Slurm", slurm_works(), "sinfo shows no usable node (start it with .ci/run)")
    canary = tmp_path / "pwned"
    args = ["; rm -rf /", "$(id)", "a'b\nc", f"$(touch {canary})"]
    evil = f"$(touch {canary}); `touch {canary}` \"q'\n"
    spec = spec_from_dict(
        {
            "name": "probe",
            "vc": "default",
            "environment": {"kernel": "python3"},
            "command": ["python3", "-c", PROBE, *args],
            "env": {"EVIL": evil},
            "memory": "256Mi",
            "max_run_time": "2m",
        }
    )
    partition = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, timeout=20).stdout.split()[
        0
    ]
    here = tmp_path / "attempt-1"
    here.mkdir()  # sbatch opens --output there before the script runs
    script = batch_script(spec, 1, partition=partition, workdir=str(tmp_path), attempt_dir=str(here))
    done = subprocess.run(
        ["sbatch", "--parsable", "--wait"], input=script, capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    log = (here / "logs" / "rank-0.log").read_text()
    assert log.splitlines() == [repr(args), *repr(evil).splitlines(), "0 True 1"]
    assert not canary.exists()
    assert (tmp_path / "outputs").is_dir()
    record = json.loads((here / "exit").read_text())
    assert record["exit_code"] == 0 and record["reason"] == "" and record["end"]
    assert (here / f"slurm-{done.stdout.strip().split(';')[0]}.out").exists()


@pytest.mark.slurm
def test_srun_ranks_log_apart_and_failures_are_recorded(tmp_path):
    """The srun path (MPI, or several nodes): one log per task; a failing rank's code is the exit record's."""
    require("Slurm", slurm_works(), "sinfo shows no usable node (start it with .ci/run)")
    spec = spec_from_dict(
        {
            "name": "ranks",
            "vc": "default",
            "environment": {"kernel": "python3"},
            "framework": "mpi",
            "procs_per_node": 2,
            "memory": "64Mi",
            "max_run_time": "2m",
            # A barrier before the failing exit: srun cancels the step's other tasks once one
            # fails, so without it rank 0 could be killed before it has written its line.
            "command": f'echo "task $SLURM_PROCID node $YITONG_NODE_RANK"; touch {tmp_path}/up-$SLURM_PROCID; '
            f"until [ -e {tmp_path}/up-0 ] && [ -e {tmp_path}/up-1 ]; do sleep 0.1; done; "
            "exit $((SLURM_PROCID * 5))",
        }
    )
    partition = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, timeout=20).stdout.split()[
        0
    ]
    here = tmp_path / "attempt-2"
    here.mkdir()
    script = batch_script(spec, 2, partition=partition, workdir=str(tmp_path), attempt_dir=str(here))
    done = subprocess.run(
        ["sbatch", "--parsable", "--wait"], input=script, capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode != 0
    for rank in (0, 1):
        assert (here / "logs" / f"rank-{rank}.log").read_text().splitlines()[0] == f"task {rank} node 0"
    assert json.loads((here / "exit").read_text())["exit_code"] == 5
