"""The batch script on a real Slurm (slurmctld/slurmd from Debian packages, started by .ci/run):
hostile argv and env values arrive unchanged and nothing in them runs."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers import require
from yitong_services.jobs.slurm import batch_script
from yitong_services.jobs.spec import spec_from_dict

PROBE = ("import os, sys; print(repr(sys.argv[1:])); print(repr(os.environ['EVIL']));"
         " print(os.environ['YITONG_NODE_RANK'], os.environ['YITONG_MASTER_ADDR'] != '', os.environ['YITONG_JOB_ID'])")


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
    spec = spec_from_dict({"name": "probe", "vc": "default", "environment": {"kernel": "python3"},
                           "command": ["python3", "-c", PROBE, *args], "env": {"EVIL": evil},
                           "memory": "256Mi", "max_run_time": "2m"})
    partition = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, timeout=20).stdout.split()[0]
    script = batch_script(spec, 1, partition=partition, workdir=str(tmp_path))
    done = subprocess.run(["sbatch", "--parsable", "--wait"], input=script, capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "logs" / "node-0.log").read_text()
    assert log.splitlines() == [repr(args), *repr(evil).splitlines(), "0 True 1"]
    assert not canary.exists()
    assert (tmp_path / "outputs").is_dir()
