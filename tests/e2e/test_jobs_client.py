"""Jobs from the user's side, end to end: `yt job`, `yt run`, `%%yt job submit` in a real kernel and
`yitong_lab.log_metrics` from a job's own process, against the real platform service running jobs
on the local backend (processes on this machine; `python` in a job is the service's, which has
yitong_lab)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from helpers import run_in_kernel
from stack import YT

from yitong_lab.jobs.code import capture

pytestmark = pytest.mark.e2e

TRAIN = """\
import os, yitong_lab
print("hello from job", os.environ["YITONG_JOB_ID"], flush=True)
print(yitong_lab.log_metrics(loss=0.1))
with open(os.path.join(os.environ["YITONG_OUTPUT_DIR"], "result.txt"), "w") as f:
    f.write("ok")
"""
SPEC = """\
name: e2e-train
vc: vision
environment: {kernel: python3}
command: [python, train.py]
cpu: 1
memory: 256Mi
"""
SLEEPER = """\
name: sleeper
vc: vision
environment: {kernel: python3}
command: [python, -c, "import time; print('sleeping', flush=True); time.sleep(120)"]
cpu: 1
memory: 128Mi
"""


def yt(stack, token: str, *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([YT, *args], env=stack.cli_env(token), cwd=cwd, capture_output=True, text=True, timeout=300)
    if check and r.returncode:
        raise AssertionError(f"yt {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}\n{stack.tail(20)}")
    return r


def job_json(stack, token: str, job_id: int) -> dict:
    return json.loads(yt(stack, token, "job", "show", str(job_id), "--json").stdout)


def wait_for(stack, token: str, job_id: int, states: set[str], timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = job_json(stack, token, job_id)
        if job["state"] in states:
            return job
        assert time.monotonic() < deadline, f"job {job_id} stayed {job['state']}: {job['reason']}\n{stack.tail(30)}"
        time.sleep(0.3)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def project(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "train.py").write_text(TRAIN)
    (path / "spec.yaml").write_text(SPEC)
    git(path, "init", "-q")
    git(path, "config", "user.email", "alice@example.org")
    git(path, "config", "user.name", "alice")
    git(path, "add", ".")
    git(path, "commit", "-qm", "train")
    return path


def submitted_id(stdout: str) -> int:
    return int(re.search(r"submitted job (\d+)", stdout).group(1))


def test_submit_follow_ledger_logs_rerun(stack, alice_token, tmp_path):
    repo = project(tmp_path / "proj")
    (repo / "NOTES.txt").write_text("an untracked file: part of the dirty hash\n")
    expected = capture(repo)
    assert expected["commit"] and expected["dirty_hash"]

    r = yt(stack, alice_token, "job", "submit", "spec.yaml", "--follow", cwd=repo)
    job_id = submitted_id(r.stdout)
    assert f"hello from job {job_id}" in r.stdout
    assert f"job {job_id} (e2e-train): succeeded (exit code 0)" in r.stderr

    job = job_json(stack, alice_token, job_id)
    assert job["state"] == "succeeded" and job["code"] == expected and len(job["runs"]) == 1
    run_id = job["runs"][0]
    shown = yt(stack, alice_token, "run", "show", str(run_id)).stdout
    assert re.search(r"^loss\s+0\.1$", shown, re.M), shown
    assert f"commit {expected['commit']}, uncommitted changes {expected['dirty_hash']} in {repo.resolve()}" in shown
    assert re.search(r"^result\.txt\s+2 B", shown, re.M), shown
    record = json.loads(yt(stack, alice_token, "run", "show", str(run_id), "--json").stdout)
    assert record["metrics"] == {"loss": 0.1} and record["code"] == expected

    assert f"hello from job {job_id}\n" in yt(stack, alice_token, "job", "logs", str(job_id)).stdout
    listed = json.loads(yt(stack, alice_token, "job", "ls", "--json").stdout)
    assert job_id in [j["id"] for j in listed]

    again = yt(stack, alice_token, "run", "rerun", str(run_id)).stdout
    new_id = submitted_id(again)
    assert new_id != job_id
    rerun = wait_for(stack, alice_token, new_id, {"succeeded", "failed"})
    assert rerun["state"] == "succeeded" and rerun["code"] == expected
    assert f"hello from job {new_id}" in yt(stack, alice_token, "job", "logs", str(new_id)).stdout


def test_cancel_retry_and_another_vcs_user(stack, alice_token, bob_token, tmp_path):
    (tmp_path / "sleeper.yaml").write_text(SLEEPER)
    job_id = submitted_id(yt(stack, alice_token, "job", "submit", "sleeper.yaml", "--no-code", cwd=tmp_path).stdout)
    wait_for(stack, alice_token, job_id, {"running"})
    deadline = time.monotonic() + 30
    while "sleeping" not in yt(stack, alice_token, "job", "logs", str(job_id)).stdout:
        assert time.monotonic() < deadline
        time.sleep(0.3)

    for verb in ("logs", "cancel", "show", "tensorboard"):  # bob is in nlp only
        r = yt(stack, bob_token, "job", verb, str(job_id), check=False)
        assert (r.returncode, r.stdout, r.stderr) == (1, "", f"yt: there is no job {job_id}\n")

    # the route signals the processes and answers with the job as it is then: a sleeper killed at
    # once may already be recorded as ended (the manager's tick ran while the answer was read)
    said = yt(stack, alice_token, "job", "cancel", str(job_id)).stdout
    assert said.startswith(f"job {job_id}: cancel requested (running;") or said == f"job {job_id} cancelled\n", said
    assert wait_for(stack, alice_token, job_id, {"cancelled", "failed"})["state"] == "cancelled"
    r = yt(stack, alice_token, "job", "cancel", str(job_id), check=False)
    assert (r.returncode, r.stderr) == (1, f"yt: job {job_id} is already cancelled\n")

    assert yt(stack, alice_token, "job", "retry", str(job_id)).stdout == f"job {job_id} queued again (attempt 2)\n"
    assert wait_for(stack, alice_token, job_id, {"running"})["attempts"] == 2
    yt(stack, alice_token, "job", "cancel", str(job_id))
    assert wait_for(stack, alice_token, job_id, {"cancelled", "failed"})["state"] == "cancelled"

    clone = yt(
        stack,
        alice_token,
        "job",
        "clone",
        str(job_id),
        "--set",
        'command=["python", "-c", "print(7 * 6)"]',
        "--env",
        "ANSWER=42",
    ).stdout
    clone_id = int(re.search(r"as job (\d+)", clone).group(1))
    cloned = wait_for(stack, alice_token, clone_id, {"succeeded", "failed"})
    assert cloned["state"] == "succeeded" and cloned["spec"]["env"] == {"ANSWER": "42"}
    assert yt(stack, alice_token, "job", "logs", str(clone_id)).stdout == "42\n"

    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    r = yt(stack, alice_token, "job", "submit", "bad.yaml", cwd=tmp_path, check=False)
    assert r.returncode == 1 and r.stderr.startswith("yt: spec: not valid YAML")
    r = yt(stack, bob_token, "job", "submit", "sleeper.yaml", cwd=tmp_path, check=False)
    assert (r.returncode, r.stderr) == (1, "yt: there is no VC vision\n")


def test_cell_magic_runs_the_cell_as_a_job(stack, alice_token, tmp_path):
    notebook_dir = project(tmp_path / "nb")
    cell = "import yitong_lab\nyitong_lab.log_metrics(acc=0.9)\nprint('from the cell job', flush=True)"
    out = run_in_kernel(
        stack.cli_env(alice_token),
        f"%%yt job submit --vc vision --name cellj --memory 256Mi --follow\n{cell}",
        notebook_dir,
        timeout=180,
    )
    job_id = submitted_id(out)
    assert "from the cell job" in out, out
    job = job_json(stack, alice_token, job_id)
    assert job["state"] == "succeeded", out
    (script,) = (notebook_dir / ".yitong" / "cells").glob("*.py")
    assert script.read_text() == cell + "\n"
    assert job["spec"]["command"] == ["python", str(script)]
    assert job["code"]["path"] == str(notebook_dir.resolve()) and job["code"]["dirty_hash"]
    record = json.loads(yt(stack, alice_token, "run", "show", str(job["runs"][-1]), "--json").stdout)
    assert record["metrics"] == {"acc": 0.9}
    # the line magic is the same grammar
    shown = run_in_kernel(stack.cli_env(alice_token), f"%yt job show {job_id}", notebook_dir)
    assert shown == yt(stack, alice_token, "job", "show", str(job_id)).stdout
