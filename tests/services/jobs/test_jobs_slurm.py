"""Jobs on a real Slurm through the service (``backend: slurm``): logs, exit codes, cancel and retry,
a 2-process DDP run with its ledger record; the backend's adopt, vanished jobs and overlapping
submits. Skipped without Slurm, failed under CI (``require``). SQLite only: the database is not
what these tests are about."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import free_port, require, served
from jobs_helpers import DDP, py_job, wait_state

from tests.services.conftest import PREFIX
from yitong_services.core.settings import Settings
from yitong_services.jobs.backend import Launch, load_backend
from yitong_services.jobs.runner_slurm import SlurmBackend
from yitong_services.jobs.spec import spec_from_dict

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def partition() -> str:
    from jobs_helpers import slurm_partition

    found = slurm_partition()
    require("Slurm", found is not None, "sinfo shows no usable node (start it with .ci/run)")
    return found


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'yitong.sqlite'}"


def slurm_settings(partition: str, **extra) -> dict:
    # single-person unless a test says otherwise: this venv's interpreter lives under /root, which
    # other accounts cannot reach (test_job_runs_as_its_owners_account runs the system python3)
    extra.setdefault("run_as", "service")
    return {
        "backend": "slurm",
        "backends": {"slurm": {"partition": partition, **extra}},
        "jobs": {"poll_interval": 0.2},
    }


@pytest.fixture(autouse=True)
def reachable_tmp(tmp_path: Path) -> None:
    """As root the service submits each job as its owner's account (yt<tag>-<name>): that account must
    reach the data and code directories under pytest's 0700 temporary root (searchable, not listable)."""
    for path in [tmp_path, *tmp_path.parents]:
        if path == Path("/tmp"):
            break
        path.chmod(path.stat().st_mode | stat.S_IXOTH)


@pytest.fixture
async def multi_user(service_factory, partition):
    async with service_factory(**slurm_settings(partition, run_as="account")) as s:
        yield s


SYSTEM_PY = "/usr/bin/python3"  # reachable by every account


@pytest.fixture
async def svc(service_factory, partition):
    async with service_factory(**slurm_settings(partition)) as s:
        yield s


async def submit(svc, who: str, body: dict) -> int:
    r = await svc.call(who, "POST", "jobs", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


async def until(check, timeout: float = 60, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not (found := await check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)
    return found


def test_registered():
    assert load_backend("slurm") is SlurmBackend


def test_slurm_accounts_command(tmp_path):
    """``yitong-service slurm-accounts`` prints the sacctmgr commands for the settings' VCs (no database yet)."""
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "backend: slurm\nbackends: {slurm: {account: 'lab-{vc}'}}\n"
        "vcs: {vision: {quota: {cpu: 8, memory: 16Gi, nvidia.com/gpu: 2}}}\n"
    )
    argv = [
        str(Path(sys.executable).parent / "yitong-service"),
        "slurm-accounts",
        "--settings",
        str(settings),
        "--data-dir",
        str(tmp_path / "data"),
        "--user",
        "yitong",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "sacctmgr -i add qos yt-vision",
        "sacctmgr -i modify qos where name=yt-vision set GrpTRES=cpu=8,mem=16384M,gres/gpu=2",
        "sacctmgr -i add account lab-vision 'Description=Yitong VC vision' Organization=yitong",
        "sacctmgr -i modify account where name=lab-vision set QOS=yt-vision DefaultQOS=yt-vision",
        "sacctmgr -i add user yitong Account=lab-vision",
    ]
    assert "backends.slurm.qos" in done.stderr and not (tmp_path / "data").exists()


async def test_job_succeeds_with_its_log(svc):
    code = (
        "import os, pathlib; print('hello from', os.environ['YITONG_JOB_ID'], os.environ['YITONG_VC']);"
        "pathlib.Path(os.environ['YITONG_OUTPUT_DIR'], 'model.txt').write_text('w')"
    )
    code_ref = {"commit": "abc123", "dirty_hash": "d1", "path": None}
    job_id = await submit(svc, "alice", py_job("hello", "vision", code, code=code_ref))
    job = await wait_state(svc, "alice", job_id, timeout=90)
    assert (job["state"], job["exit_code"], job["backend"]) == ("succeeded", 0, "slurm"), job
    slurm_id, here = job["backend_ref"].split(":", 1)
    assert slurm_id.isdigit() and here.endswith(f"/jobs/{job_id}/attempt-1")
    assert job["access"].startswith(f"Slurm job {slurm_id}") and job["ports"] == {"rdzv": 29500}
    assert job["ranks"] == [0]
    logs = await svc.call("alice", "GET", f"jobs/{job_id}/logs?rank=0")
    assert logs.text.strip() == f"hello from {job_id} vision"
    script = svc.app.state.jobs.backend.script_path(Path(here))
    assert f"#SBATCH --job-name=yt-{job_id}-hello" in script.read_text()
    assert "#SBATCH --account=vision" in script.read_text()
    record = (await svc.call("alice", "GET", f"runs/{job['runs'][0]}")).json()
    assert (record["backend"], record["state"], record["exit_code"]) == ("slurm", "succeeded", 0)
    assert [a["path"] for a in record["artifacts"]] == ["model.txt"]
    assert (await svc.call("admin", "GET", "allocations")).json() == []


async def test_job_runs_as_its_owners_account(multi_user):
    """Submitted as root, the job runs as the owner's system account (sbatch --uid), never root; its
    outputs are that account's; the batch script is out of its reach."""
    import pwd

    from yitong_services.core.accounts import account_name, can_switch_users, instance_tag

    require("root (the service switches users only as root)", can_switch_users(), "run the tests as root")
    code = (
        "import os, pathlib, subprocess; print(os.getuid(), os.getgid(), subprocess.run(['id', '-un'], "
        "capture_output=True, text=True).stdout.strip(), os.environ['HOME']);"
        "pathlib.Path(os.environ['YITONG_OUTPUT_DIR'], 'w.txt').write_text('w')"
    )
    job_id = await submit(multi_user, "alice", {**py_job("whoami", "vision", code), "command": [SYSTEM_PY, "-c", code]})
    job = await wait_state(multi_user, "alice", job_id, timeout=90)
    assert job["state"] == "succeeded", (job, (await multi_user.call("alice", "GET", f"jobs/{job_id}/logs")).text)
    tag = instance_tag(os.path.realpath(multi_user.ctx.settings.data_dir))  # this platform's account names
    entry = pwd.getpwnam(account_name("alice", tag))
    uid, gid, name, home = (await multi_user.call("alice", "GET", f"jobs/{job_id}/logs")).text.split()
    assert (int(uid), int(gid), name) == (entry.pw_uid, entry.pw_gid, f"yt{tag}-alice") and int(uid) != 0
    assert home == str(Path(multi_user.ctx.settings.data_dir).absolute() / "home" / "alice")  # HOME is the account's
    outputs = multi_user.app.state.jobs.workdir(job_id) / "outputs"
    assert (outputs / "w.txt").stat().st_uid == entry.pw_uid and outputs.stat().st_uid == entry.pw_uid
    _slurm_id, here = job["backend_ref"].split(":", 1)
    script = multi_user.app.state.jobs.backend.script_path(Path(here))
    assert script.stat().st_uid == 0 and stat.S_IMODE(script.parent.stat().st_mode) == 0o700
    # bob's job is bob's account: another uid
    other = await submit(
        multi_user,
        "bob",
        {**py_job("whoami", "nlp", ""), "command": [SYSTEM_PY, "-c", "import os; print(os.getuid())"]},
    )
    done = await wait_state(multi_user, "bob", other, timeout=90)
    assert done["state"] == "succeeded", (done["reason"], done["exit_code"], done["backend_ref"])
    assert (
        int((await multi_user.call("bob", "GET", f"jobs/{other}/logs")).text)
        == pwd.getpwnam(account_name("bob", tag)).pw_uid
    )


async def test_a_link_in_the_attempt_directory_is_not_followed(multi_user):
    """The job owns its logs directory: a log replaced by a link to a root-only file reads as empty."""
    code = (
        "import os, pathlib; d = pathlib.Path(os.environ['YITONG_OUTPUT_DIR']).parent;"
        "[p.unlink() for p in d.glob('attempt-1/logs/rank-0.log')];"
        "os.symlink('/etc/shadow', d / 'attempt-1/logs/rank-0.log')"
    )
    job_id = await submit(multi_user, "alice", {**py_job("link", "vision", code), "command": [SYSTEM_PY, "-c", code]})
    job = await wait_state(multi_user, "alice", job_id, timeout=90)
    assert job["state"] == "succeeded", job
    logs = await multi_user.call("alice", "GET", f"jobs/{job_id}/logs?rank=0")
    assert logs.status_code == 200 and "root:" not in logs.text


async def test_failing_job_fails_with_its_exit_code(svc):
    job_id = await submit(svc, "bob", py_job("boom", "nlp", "import sys; print('going down'); sys.exit(3)"))
    job = await wait_state(svc, "bob", job_id, timeout=90)
    assert (job["state"], job["exit_code"], job["reason"]) == ("failed", 3, "exit code 3"), job
    assert "going down" in (await svc.call("bob", "GET", f"jobs/{job_id}/logs?rank=0")).text


async def test_cancel_running_job_then_retry(svc):
    program = (
        "import os, sys, time\n"
        "if os.environ['YITONG_ATTEMPT'] == '1':\n"
        "    print('first', flush=True); time.sleep(120)\n"
        "print('second attempt', flush=True)\n"
    )
    job_id = await submit(svc, "alice", py_job("sleepy", "vision", program))
    job = await wait_state(svc, "alice", job_id, {"running"}, timeout=60)
    ref = job["backend_ref"]
    backend = svc.app.state.jobs.backend
    await until(lambda: _has(backend, ref, b"first"), 60, "the first attempt to print")

    async def hosts():
        return (await svc.call("alice", "GET", f"jobs/{job_id}")).json()["hosts"]

    assert await until(hosts, 20, "the job's hosts") == ["localhost"]  # where Slurm placed it, once a poll saw it
    r = await svc.call("alice", "POST", f"jobs/{job_id}/cancel")
    assert r.status_code == 202, r.text
    job = await wait_state(svc, "alice", job_id, timeout=60)
    assert (job["state"], job["reason"]) == ("cancelled", "cancelled"), job
    assert (await backend.poll(ref)).state == "failed"  # Slurm says CANCELLED; the manager knew it asked
    r = await svc.call("alice", "POST", f"jobs/{job_id}/retry")
    assert r.status_code == 200, r.text
    job = await wait_state(svc, "alice", job_id, timeout=90)
    assert (job["state"], job["attempts"], job["exit_code"]) == ("succeeded", 2, 0), job
    assert job["backend_ref"].endswith("/attempt-2") and job["backend_ref"] != ref
    assert "second attempt" in (await svc.call("alice", "GET", f"jobs/{job_id}/logs?rank=0")).text
    assert len(job["runs"]) == 2


async def _has(backend, ref: str, text: bytes) -> bool:
    return text in await backend.read_log(ref, 0)


async def test_ddp_job_and_ledger_on_slurm(service_factory, partition, tmp_path):
    pytest.importorskip("torch")
    port = free_port()
    settings = slurm_settings(partition)
    settings["jobs"]["api_url"] = f"http://127.0.0.1:{port}{PREFIX}api/v1"  # the metrics POST needs real HTTP
    script = tmp_path / "code" / "train.py"
    script.parent.mkdir()
    script.write_text(DDP)
    body = {
        "name": "ddp",
        "vc": "vision",
        "environment": {"kernel": "python3"},
        "command": ["python", "train.py"],
        "framework": "pytorch",
        "procs_per_node": 2,
        "cpu": 2,
        "memory": "1Gi",
        "max_run_time": "10m",
        "code": {"commit": "0123abcd", "dirty_hash": "b3:ffee", "path": str(script.parent)},
    }
    async with service_factory(**settings) as svc:
        async with served(svc.app, port):
            job_id = await submit(svc, "alice", body)
            job = await wait_state(svc, "alice", job_id, timeout=240)
            logs = {rank: (await svc.call("alice", "GET", f"jobs/{job_id}/logs?rank={rank}")).text for rank in (0, 1)}
            assert (job["state"], job["exit_code"]) == ("succeeded", 0), (job, logs)
            for rank in (0, 1):
                assert f"rank {rank} of 2" in logs[rank]
            assert job["ranks"] == [0, 1]
            record = (await svc.call("alice", "GET", f"runs/{job['runs'][0]}")).json()
    assert record["code"] == body["code"] and record["backend"] == "slurm"
    assert record["metrics"]["world"] == 2 and "loss" in record["metrics"]
    assert [a["path"] for a in record["artifacts"]] == ["model.pt"]
    assert record["environment"]["python"] == sys.executable and len(record["environment"]["pip_freeze_sha256"]) == 64
    assert record["parameters"]["procs_per_node"] == 2 and record["parameters"]["framework"] == "pytorch"
    assert record["inputs"] == [] and record["state"] == "succeeded" and record["exit_code"] == 0


# ---- the backend on its own ----


def backend_for(tmp_path: Path, partition: str, **extra) -> SlurmBackend:
    settings = Settings.model_validate({"backend": "slurm", "backends": {"slurm": {"partition": partition, **extra}}})
    return SlurmBackend(tmp_path / "data", settings)


def launch_of(backend: SlurmBackend, job_id: int, program: str, attempt: int = 1) -> Launch:
    spec = spec_from_dict(py_job("raw", "default", program, memory="32Mi"))
    workdir = backend.data_dir / "jobs" / str(job_id)
    workdir.mkdir(parents=True, exist_ok=True)
    return Launch(job_id, attempt, spec, workdir, workdir, {"YITONG_ATTEMPT": str(attempt)})


async def test_adopt_finds_the_submitted_attempt(tmp_path, partition):
    backend = backend_for(tmp_path, partition)
    ref = await backend.submit(launch_of(backend, 5, "import time; print('up', flush=True); time.sleep(60)"))
    try:
        await until(lambda: _has(backend, ref, b"up"), 60, "the job to start")
        again = backend_for(tmp_path, partition)  # a restarted service
        assert await again.adopt(5, 1) == ref
        assert await again.adopt(5, 2) is None and await again.adopt(6, 1) is None
        polled = await again.poll(ref)
        assert polled.state == "running", polled
    finally:
        await backend.cancel(ref)
        await backend.cancel(ref)  # idempotent
    polled = await until(lambda: _ended(backend, ref), 60, "the cancelled job to end")
    assert (polled.state, polled.exit_code, polled.reason) == ("failed", 143, "cancelled in Slurm (scancel)"), polled
    # ended: still adopted, from its slurm-<id>.out
    assert await backend_for(tmp_path, partition).adopt(5, 1) == ref


async def _ended(backend: SlurmBackend, ref: str):
    polled = await backend.poll(ref)
    return polled if polled.state != "running" else None


async def test_unknown_jobs_vanish(tmp_path, partition):
    backend = backend_for(tmp_path, partition)
    gone = f"99999990:{tmp_path}/nowhere"
    polled = await backend.poll_many([gone])
    assert (
        polled[gone].state == "vanished" and "Slurm job 99999990 is gone without an exit record" in polled[gone].reason
    )
    assert await backend.poll_many([]) == {}


def wrapped_sbatch(tmp_path: Path, before: str = "", options: str = "") -> Path:
    """A ``bin_dir`` whose sbatch runs ``before`` and adds ``options`` (the other commands are Slurm's)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("squeue", "scancel", "scontrol"):
        (bin_dir / name).symlink_to(_which(name))
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f'#!/bin/sh\n{before}\nexec {_which("sbatch")} {options} "$@"\n')
    sbatch.chmod(sbatch.stat().st_mode | stat.S_IXUSR)
    return bin_dir


async def test_pending_job_says_why(tmp_path, partition):
    backend = backend_for(tmp_path, partition, bin_dir=str(wrapped_sbatch(tmp_path, options="--hold")))
    ref = await backend.submit(launch_of(backend, 7, "pass"))
    try:
        polled = await backend.poll(ref)
        assert (polled.state, polled.reason) == ("running", "waiting in Slurm's queue: JobHeldUser"), polled
        assert backend.describe(ref)["access"].startswith(f"Slurm job {ref.split(':')[0]} (no nodes assigned yet)")
    finally:
        await backend.cancel(ref)
    polled = await until(lambda: _ended(backend, ref), 60, "the held job to be cancelled")
    assert (polled.state, polled.exit_code, polled.reason) == ("failed", None, "cancelled in Slurm (scancel)")


async def test_submits_overlap(tmp_path, partition):
    """sbatch answers slowly here (1 s, a busy controller): 8 submits at once take about 1 s, not 8."""
    backend = backend_for(tmp_path, partition, bin_dir=str(wrapped_sbatch(tmp_path, before="sleep 1")))
    t0 = time.monotonic()
    refs = await asyncio.gather(*(backend.submit(launch_of(backend, 100 + i, "pass")) for i in range(8)))
    elapsed = time.monotonic() - t0
    assert len(set(refs)) == 8 and elapsed < 6, elapsed  # one after another: 8 s and more
    for ref in refs:
        await until(lambda ref=ref: _ended(backend, ref), 90, f"{ref} to end")
    polled = await backend.poll_many(refs)
    assert {p.state for p in polled.values()} == {"succeeded"}, polled


def _which(name: str) -> str:
    import shutil

    found = shutil.which(name)
    assert found, name
    return os.path.realpath(found)
