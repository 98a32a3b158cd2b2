"""SSH into a running job on a real Slurm (slurmctld/slurmd from Debian packages): the gateway's
``srun --jobid --overlap`` step runs beside the job, inside its allocation."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest
from helpers import free_port, require
from jobs_helpers import py_job, slurm_partition, wait_state
from ssh_helpers import key_pair

from yitong_services.ssh.hostkey import host_key_path

pytestmark = [pytest.mark.slurm, pytest.mark.skipif(not shutil.which("ssh"), reason="no OpenSSH client")]


@pytest.fixture
def db_url(tmp_path):
    return f"sqlite:///{tmp_path / 'yitong.sqlite'}"


async def test_shell_in_a_running_slurm_job(service_factory, tmp_path):
    partition = slurm_partition()
    require("Slurm", partition is not None, "sinfo shows no usable node (start it with .ci/run)")
    port = free_port()
    settings = {
        "backend": "slurm",
        "backends": {"slurm": {"partition": partition, "run_as": "service"}},
        "jobs": {"poll_interval": 0.2},
        "ssh": {"port": port},
    }
    async with service_factory(**settings) as svc:
        key, line = key_pair(tmp_path)
        assert (await svc.call("alice", "POST", "me/ssh-keys", json={"key": line})).status_code == 201
        pub = host_key_path(svc.ctx.settings.data_dir).with_suffix(".pub").read_text().split()
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
        r = await svc.call("alice", "POST", "jobs", json=py_job("sleeper", "vision", "import time; time.sleep(120)"))
        assert r.status_code == 201, r.text
        job = await wait_state(svc, "alice", r.json()["id"], states={"running"}, timeout=90)
        slurm_id = job["backend_ref"].split(":", 1)[0]
        try:
            # the platform says running once sbatch took the job; a busy node may still hold it pending
            for _ in range(300):
                state = subprocess.run(["squeue", "-h", "-j", slurm_id, "-o", "%T"], capture_output=True, text=True)
                if state.stdout.strip() == "RUNNING":
                    break
                await asyncio.sleep(0.3)
            argv = ["ssh", "-F", "/dev/null", "-p", str(port), "-i", str(key), "-o", "IdentitiesOnly=yes"]
            argv += ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known}"]
            argv += [f"alice+job.{job['id']}@127.0.0.1", "echo in=$SLURM_JOB_ID; exit 4"]
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            out, err = await asyncio.wait_for(proc.communicate(), 90)
            assert (proc.returncode, out.decode().strip()) == (4, f"in={slurm_id}"), err.decode()
        finally:
            await svc.call("alice", "POST", f"jobs/{job['id']}/cancel")
            await wait_state(svc, "alice", job["id"], timeout=90)
