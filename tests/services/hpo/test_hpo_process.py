"""The service as a real process: kill -9 in the middle of an experiment, restart, and it resumes
with every trial run exactly once and none lost."""

from __future__ import annotations

import time

from jobs_helpers import PY

TRIAL = """
import os, time
from yitong_lab import hpo
p = hpo.get_params()
open({ran!r}, "a").write(os.environ["NNI_TRIAL_SEQ_ID"] + "\\n")
for i in range(3):
    hpo.report(p["x"] * i)
    time.sleep(0.5)
hpo.report_final(p["x"])
"""


def wait_exp(proc, exp_id, ok, timeout=120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        exp = proc.call("alice", "GET", f"experiments/{exp_id}").json()
        if ok(exp):
            return exp
        assert time.monotonic() < deadline, (exp, proc.log.read_text()[-2000:])
        time.sleep(0.1)


def test_kill9_restart_resumes_without_loss_or_rerun(proc, tmp_path):
    ran = tmp_path / "ran.txt"
    body = {
        "name": "durable",
        "vc": "vision",
        "space": {"x": {"_type": "uniform", "_value": [0, 1]}},
        "tuner": {"name": "TPE", "args": {"n_startup_trials": 3}},
        "concurrency": 2,
        "max_trials": 8,
        "template": {
            "environment": {"kernel": "python3"},
            "command": [PY, "-c", TRIAL.format(ran=str(ran))],
            "cpu": 0.5,
            "memory": "64Mi",
        },
    }
    r = proc.call("alice", "POST", "experiments", json=body)
    assert r.status_code == 201, r.text
    exp_id = r.json()["id"]
    wait_exp(proc, exp_id, lambda e: e["counts"].get("complete", 0) >= 2 and e["counts"].get("running", 0) == 2)
    proc.kill9()
    time.sleep(0.5)
    proc.start()
    exp = wait_exp(proc, exp_id, lambda e: e["state"] == "done", timeout=180)
    assert exp["counts"] == {"complete": 8}, exp["trials"]
    assert sorted(t["number"] for t in exp["trials"]) == list(range(8))
    assert len({t["job_id"] for t in exp["trials"]}) == 8
    assert sorted(int(n) for n in ran.read_text().split()) == list(range(8))  # each trial ran exactly once
    assert all(len(t["intermediate"]) == 3 for t in exp["trials"])  # no report read twice or lost
    assert exp["best"]["value"] == max(t["value"] for t in exp["trials"])


# NNI's examples/trials/mnist-pytorch shape: config.yml beside search_space.json and the trial,
# the trial written for NNI and run unchanged with the real nni package (its own venv)
NNI_TRIAL = """
import nni

params = {"lr": 0.1, "batch_size": 32, "momentum": 0.5}
params.update(nni.get_next_parameter())
acc = 0.0
for epoch in range(3):
    acc = 1 - abs(params["lr"] - 0.01) - 0.001 * epoch * (params["momentum"] < 0.5)
    nni.report_intermediate_result(acc)
nni.report_final_result({"default": acc, "loss": 1 - acc})
"""
NNI_CONFIG = """
searchSpaceFile: search_space.json
trialCommand: {python} mnist.py
trialGpuNumber: 0
trialConcurrency: 2
maxTrialNumber: 4
maxExperimentDuration: 10m
tuner:
  name: TPE
  classArgs:
    optimize_mode: maximize
trainingService:
  platform: local
"""
NNI_SPACE = {
    "batch_size": {"_type": "choice", "_value": [16, 32, 64, 128]},
    "lr": {"_type": "choice", "_value": [0.0001, 0.001, 0.01, 0.1]},
    "momentum": {"_type": "uniform", "_value": [0, 1]},
}


def nni_python():
    """bench/.venv-nni's python with nni 3.0 (made on first use; nni's deps clash with ours)."""
    import subprocess
    import sys
    from pathlib import Path

    from helpers import require

    venv = Path(__file__).resolve().parents[3] / "bench" / ".venv-nni"
    python = venv / "bin" / "python"
    if not python.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True).returncode == 0
        made = (
            made
            and subprocess.run(
                [str(venv / "bin" / "pip"), "install", "-q", "setuptools<81", "nni==3.0"], capture_output=True
            ).returncode
            == 0
        )
        require("nni 3.0", made, "pip could not install it into bench/.venv-nni")
    return python


def test_nni_config_and_unchanged_nni_trial_through_yt(proc, tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    python = nni_python()
    code = tmp_path / "mnist-pytorch"
    code.mkdir()
    (code / "mnist.py").write_text(NNI_TRIAL)
    (code / "search_space.json").write_text(json.dumps(NNI_SPACE))
    (code / "config.yml").write_text(NNI_CONFIG.format(python=python))
    yt = Path(sys.executable).parent / "yt"
    env = {**os.environ, "YT_API_URL": proc.base.rstrip("/"), "YT_TOKEN": proc.hub.tokens["alice"]}
    r = subprocess.run(
        [str(yt), "hpo", "create", "--from", str(code / "config.yml"), "--vc", "vision", "--follow"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, (r.stdout, r.stderr, proc.log.read_text()[-3000:])
    assert "done; 4 complete; best" in r.stdout, r.stdout
    assert "4/4" in r.stderr  # the progress bar
    # notes (what the trial code imports) and warnings come first; the summary is the last line
    exp_id = int(r.stdout.splitlines()[-1].split()[1])
    exp = proc.call("alice", "GET", f"experiments/{exp_id}").json()
    for t in exp["trials"]:
        assert set(t["params"]) == {"batch_size", "lr", "momentum"}
        assert len(t["intermediate"]) == 3 and t["value"] == t["intermediate"][-1]
    assert exp["best"]["params"]["lr"] == max(exp["trials"], key=lambda t: t["value"])["params"]["lr"]
    shown = subprocess.run([str(yt), "hpo", "show", str(exp_id)], capture_output=True, text=True, env=env)
    assert shown.returncode == 0 and "complete" in shown.stdout


def test_unchanged_nni_trial_reports_from_a_machine_without_the_shared_files(proc, tmp_path):
    """``YT_HPO_CHANNEL: forward`` (what a Kubernetes trial gets): the trial runs through
    ``yitong_lab.hpo.forward``, NNI's runtime writes its file channel in a private directory the
    service never reads, and the reports reach the platform over HTTP with the job's token."""
    python = nni_python()
    code = tmp_path / "mnist-pytorch"
    code.mkdir()
    (code / "mnist.py").write_text(NNI_TRIAL)
    body = {
        "name": "forwarded",
        "vc": "vision",
        "space": NNI_SPACE,
        "tuner": {"name": "TPE"},
        "concurrency": 2,
        "max_trials": 2,
        "code": {"path": str(code)},
        "template": {
            "environment": {"kernel": "python3"},
            "command": [str(python), "mnist.py"],
            "cpu": 0.5,
            "memory": "256Mi",
            "env": {"YT_HPO_CHANNEL": "forward"},
        },
    }
    r = proc.call("alice", "POST", "experiments", json=body)
    assert r.status_code == 201, r.text
    exp = wait_exp(proc, r.json()["id"], lambda e: e["state"] == "done", timeout=180)
    assert exp["counts"] == {"complete": 2}, exp
    for t in exp["trials"]:
        assert len(t["intermediate"]) == 3 and t["value"] == t["intermediate"][-1]
        job = proc.call("alice", "GET", f"jobs/{t['job_id']}").json()
        assert job["spec"]["command"][:4] == ["python", "-m", "yitong_lab.hpo.forward", "--"]
        assert not (proc.data / "jobs" / str(t["job_id"]) / ".nni" / "metrics").exists()


# alice's trial (vision): waits for the test's "go"; its final result comes after
VICTIM = """
import os, pathlib, time
from yitong_lab import hpo
hpo.get_params()
go = pathlib.Path({go!r})
while not go.exists():
    time.sleep(0.05)
hpo.report_final(0.5)
"""

# bob's trial (nlp): tries to write alice's trial with what it holds, then reports its own
ATTACKER = """
import json, os, pathlib
import httpx
from yitong_lab import hpo
hpo.get_params()
api, victim = os.environ["YITONG_API_URL"], int(os.environ["VICTIM_JOB"])
url = f"{{api}}/experiments/trials/{{victim}}/report"
body = {{"type": "final", "value": 1000.0}}
seen = {{}}
for name, token in (("own job token", os.environ["YITONG_JOB_TOKEN"]), ("own hub token", os.environ["YT_TOKEN"]), ("none", "")):
    r = httpx.post(url, json=body, headers={{"Authorization": f"token {{token}}"}} if token else {{}})
    seen[name] = [r.status_code, r.text]
h = {{"Authorization": "token " + os.environ["YT_TOKEN"]}}
seen["read victim experiment"] = httpx.get(f"{{api}}/experiments/{{os.environ['VICTIM_EXP']}}", headers=h).status_code
seen["stop victim experiment"] = httpx.post(f"{{api}}/experiments/{{os.environ['VICTIM_EXP']}}/stop", headers=h).status_code
pathlib.Path({out!r}).write_text(json.dumps(seen))
hpo.report_final(1.0)
"""


def test_a_trial_in_another_vc_cannot_report_for_or_touch_someone_elses_trial(proc, tmp_path):
    """From inside a real trial job of VC nlp (bob), with every token it holds, the report route
    of a running trial of VC vision (alice) refuses (401: only that job's own token writes it), and
    alice's experiment reads as absent and cannot be stopped; alice's result is untouched."""

    def body(name: str, vc: str, code: str, env: dict | None = None) -> dict:
        return {
            "name": name,
            "vc": vc,
            "space": {"x": {"_type": "uniform", "_value": [0, 1]}},
            "tuner": {"name": "Random"},
            "concurrency": 1,
            "max_trials": 1,
            "template": {
                "environment": {"kernel": "python3"},
                "command": [PY, "-c", code],
                "cpu": 0.5,
                "memory": "64Mi",
                "env": env or {},
            },
        }

    go, out = tmp_path / "go", tmp_path / "seen.json"
    r = proc.call("alice", "POST", "experiments", json=body("victim", "vision", VICTIM.format(go=str(go))))
    assert r.status_code == 201, r.text
    victim = r.json()["id"]
    exp = wait_exp(proc, victim, lambda e: any(t.get("job_id") for t in e["trials"]))
    victim_job = exp["trials"][0]["job_id"]
    env = {"VICTIM_JOB": str(victim_job), "VICTIM_EXP": str(victim)}
    attack = body("attacker", "nlp", ATTACKER.format(out=str(out)), env)
    attack["template"]["hub_token"] = True  # every token a trial can hold: its owner's too
    r = proc.call("bob", "POST", "experiments", json=attack)
    assert r.status_code == 201, r.text
    attacker = r.json()["id"]
    deadline = time.monotonic() + 120
    while proc.call("bob", "GET", f"experiments/{attacker}").json()["state"] != "done":
        assert time.monotonic() < deadline, proc.log.read_text()[-2000:]
        time.sleep(0.2)
    seen = __import__("json").loads(out.read_text())
    assert seen["own job token"][0] == 401 and f"token of job {victim_job}" in seen["own job token"][1], seen
    assert seen["own hub token"][0] == 401 and seen["none"][0] == 401, seen
    assert seen["read victim experiment"] == 404 and seen["stop victim experiment"] == 404, seen
    go.write_text("")
    exp = wait_exp(proc, victim, lambda e: e["state"] == "done")
    assert exp["counts"] == {"complete": 1} and exp["trials"][0]["value"] == 0.5, exp["trials"]


# writes which of its owner's credentials a trial holds
CREDENTIALS = """
import json, os, pathlib
from yitong_lab import hpo
hpo.get_params()
names = ("JUPYTERHUB_API_TOKEN", "YT_TOKEN", "YITONG_JOB_TOKEN")
pathlib.Path({out!r}).write_text(json.dumps(sorted(n for n in names if os.environ.get(n))))
hpo.report_final(1.0)
"""


def test_trials_hold_no_hub_token_of_their_owner_unless_the_template_asks(proc, tmp_path):
    """Least privilege: a trial reports with its job's own token; its owner's hub token (what lets
    code act as them: yt, the SDK) comes only with ``hub_token: true`` in the template."""
    seen = {}
    for asks in (None, True):
        out = tmp_path / f"seen-{asks}.json"
        template = {
            "environment": {"kernel": "python3"},
            "command": [PY, "-c", CREDENTIALS.format(out=str(out))],
            "cpu": 0.5,
            "memory": "64Mi",
            **({"hub_token": asks} if asks is not None else {}),
        }
        body = {
            "name": "cred-asks" if asks else "cred",
            "vc": "vision",
            "space": {"x": {"_type": "uniform", "_value": [0, 1]}},
            "tuner": {"name": "Random"},
            "concurrency": 1,
            "max_trials": 1,
            "template": template,
        }
        r = proc.call("alice", "POST", "experiments", json=body)
        assert r.status_code == 201, r.text
        exp = wait_exp(proc, r.json()["id"], lambda e: e["state"] == "done")
        assert exp["counts"] == {"complete": 1}, exp["trials"]
        seen[asks] = __import__("json").loads(out.read_text())
    assert seen[None] == ["YITONG_JOB_TOKEN"]
    assert seen[True] == ["JUPYTERHUB_API_TOKEN", "YITONG_JOB_TOKEN", "YT_TOKEN"]
