"""Experiments over REST on the local backend: trials are real jobs, the trial code is real Python
speaking the file channel through ``yitong_lab.hpo``."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta

import pytest
from jobs_helpers import PY, wait_state

FAST = {"jobs": {"poll_interval": 0.1}}

# maximise -(x-0.3)^2: reports 3 steps, then the final value
QUAD = """
from yitong_lab import hpo
p = hpo.get_params()
for i in range(3):
    hpo.report(-(p["x"] - 0.3) ** 2 - 0.1 * (2 - i))
hpo.report_final({"default": -(p["x"] - 0.3) ** 2, "other": 1})
"""


def experiment(name: str, code: str, **extra) -> dict:
    return {
        "name": name,
        "vc": "vision",
        "space": {"x": {"_type": "uniform", "_value": [0, 1]}},
        "tuner": {"name": "Random"},
        "concurrency": 2,
        "max_trials": 6,
        "template": {
            "environment": {"kernel": "python3"},
            "command": [PY, "-c", code],
            "cpu": 0.5,
            "memory": "64Mi",
            # the in-process service listens on no port: the trials report through the file channel
            # (the HTTP channel is tested against the real process in test_hpo_process.py)
            "env": {"YT_HPO_CHANNEL": "file"},
        },
        **extra,
    }


@pytest.fixture
async def svc(service_factory):
    async with service_factory(**FAST) as s:
        yield s


async def wait_exp(svc, who, exp_id, states=("done", "stopped"), timeout=120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        r = await svc.call(who, "GET", f"experiments/{exp_id}")
        assert r.status_code == 200, r.text
        if r.json()["state"] in states:
            return r.json()
        assert time.monotonic() < deadline, r.json()
        await asyncio.sleep(0.2)


async def test_small_experiment_finishes_with_best(svc):
    r = await svc.call("alice", "POST", "experiments", json=experiment("quad", QUAD))
    assert r.status_code == 201, r.text
    exp = await wait_exp(svc, "alice", r.json()["id"])
    assert exp["state"] == "done" and exp["counts"] == {"complete": 6}, exp
    values = [t["value"] for t in exp["trials"]]
    assert exp["best"]["value"] == max(values)
    assert all(len(t["intermediate"]) == 3 for t in exp["trials"])
    assert len({t["job_id"] for t in exp["trials"]}) == 6  # every trial is its own job
    job = (await svc.call("alice", "GET", f"jobs/{exp['trials'][0]['job_id']}")).json()
    assert job["state"] == "succeeded" and job["user"] == "alice"
    # the final result came as the job's result (its wrapper's pipe): it is in the run's metrics
    record = (await svc.call("alice", "GET", f"runs/{job['runs'][0]}")).json()
    assert record["metrics"] == {"default": exp["trials"][0]["value"], "other": 1}
    assert exp["best_so_far"][-1] == exp["best"]["value"]
    imp = await svc.call("alice", "GET", f"experiments/{exp['id']}/importance")
    assert imp.status_code == 200 and set(imp.json()["importance"]) == {"x"}
    # the Experiments view polls with the ETag: an unchanged experiment is a 304 without a body
    r = await svc.call("alice", "GET", f"experiments/{exp['id']}")
    etag = r.headers["etag"]
    same = await svc.call("alice", "GET", f"experiments/{exp['id']}", headers={"if-none-match": etag})
    assert (same.status_code, same.content) == (304, b"")
    # curves are bounded: ?points=2 keeps the first and last of each trial's 3 steps
    short = (await svc.call("alice", "GET", f"experiments/{exp['id']}?points=2")).json()
    assert all(t["steps"] == 3 and t["intermediate_steps"] == [0, 2] for t in short["trials"])
    assert [t["intermediate"][-1] for t in short["trials"]] == [t["intermediate"][-1] for t in exp["trials"]]
    r = await svc.call("alice", "GET", f"experiments/{exp['id']}?points=0")
    assert r.status_code == 422 and "points" in r.text
    listed = await svc.call("alice", "GET", "experiments")
    again = await svc.call("alice", "GET", "experiments", headers={"if-none-match": listed.headers["etag"]})
    assert again.status_code == 304
    # a progress bar's poll: the counts and the best trial, the same as the whole answer's
    brief = (await svc.call("alice", "GET", f"experiments/{exp['id']}?trials=false")).json()
    assert brief == {k: v for k, v in exp.items() if k not in ("trials", "best_so_far")}
    assert [e for e in listed.json() if e["id"] == exp["id"]] == [brief]


async def test_a_trials_end_starts_the_next_trial_without_waiting_for_a_poll(service_factory):
    """The job manager records a trial's end, the experiment's pass runs in the same hop (the
    manager's ``on_end``) and the next trial is admitted and started in the same tick: with a
    30 s poll interval, four trials one after another still finish in seconds."""
    async with service_factory(jobs={"poll_interval": 30}) as svc:
        body = experiment("chain", "from yitong_lab import hpo; hpo.get_params(); hpo.report_final(1.0)")
        body.update(concurrency=1, max_trials=4)
        start = time.monotonic()
        r = await svc.call("alice", "POST", "experiments", json=body)
        assert r.status_code == 201, r.text
        # bounds under the 30 s poll, with room for a loaded machine's trial starts
        exp = await wait_exp(svc, "alice", r.json()["id"], timeout=28)
        assert exp["counts"] == {"complete": 4}, exp
        assert time.monotonic() - start < 28
        jobs = [(await svc.call("alice", "GET", f"jobs/{t['job_id']}")).json() for t in exp["trials"]]
        assert all(j["state"] == "succeeded" for j in jobs)
        for before, after in zip(jobs, jobs[1:]):  # each next job started right at the end of the one before
            gap = datetime.fromisoformat(after["started"]) - datetime.fromisoformat(before["finished"])
            assert gap.total_seconds() < 12, (before, after)


async def test_tpe_and_medianstop_prunes_a_bad_trial(svc):
    # trial 0 is good; later trials report a worse curve and are stopped by Medianstop
    code = """
import os, time
from yitong_lab import hpo
p = hpo.get_params()
bad = os.environ["NNI_TRIAL_SEQ_ID"] != "0"
for i in range(20):
    hpo.report(0.0 if bad else 1.0)
    time.sleep(0.3 if bad else 0.01)
hpo.report_final(0.0 if bad else 1.0)
"""
    body = experiment(
        "prune",
        code,
        tuner={"name": "TPE"},
        assessor={"name": "Medianstop", "args": {"start_step": 2}},
        concurrency=1,
        max_trials=2,
    )
    r = await svc.call("alice", "POST", "experiments", json=body)
    assert r.status_code == 201, r.text
    exp = await wait_exp(svc, "alice", r.json()["id"])
    by_x = {t["number"]: t for t in exp["trials"]}
    assert by_x[0]["state"] == "complete", exp
    assert by_x[1]["state"] == "pruned" and by_x[1]["reason"].startswith("pruned at step"), exp
    assert len(by_x[1]["intermediate"]) < 20
    job = (await svc.call("alice", "GET", f"jobs/{by_x[1]['job_id']}")).json()
    assert job["state"] == "cancelled"


# waits for a file (the test lets it go), then prints 8 lines and fails
HOLD_THEN_FAIL = """
import os, pathlib, sys, time
from yitong_lab import hpo
hpo.get_params()
while not pathlib.Path(os.environ["GO"]).exists():
    time.sleep(0.05)
for i in range(8):
    print(f"epoch {i}", flush=True)
sys.exit("ValueError: the loss is nan")
"""


async def test_a_trial_waits_with_its_job_and_a_failed_one_says_why(svc, tmp_path):
    """Two 5-cpu trials at once in vision (8 cpu) beside her 1-cpu server: the create warns that
    only one fits; the second shows ``waiting`` with its job's reason (not ``running``) and no
    start while the first runs; each failed trial's reason ends with its log's last lines."""
    body = experiment("wait", HOLD_THEN_FAIL, max_trials=2)
    body["template"].update(cpu=5, env={**body["template"]["env"], "GO": str(tmp_path / "go")})
    assert (await svc.allocate("alice", "vision", "cpu-small", "alice/")).status_code == 201  # her server: 1 cpu
    r = await svc.call("alice", "POST", "experiments", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["warnings"] == [
        "at most 1 trial can run at once: VC vision's quota is 8 cpu, your server holds 1, each trial asks 5"
        " (concurrency 2)"
    ]
    exp_id = r.json()["id"]
    deadline = time.monotonic() + 60
    while True:
        exp = (await svc.call("alice", "GET", f"experiments/{exp_id}")).json()
        states = sorted(t["state"] for t in exp["trials"])
        if states == ["running", "waiting"]:
            break
        assert time.monotonic() < deadline, exp
        await asyncio.sleep(0.1)
    waiting = next(t for t in exp["trials"] if t["state"] == "waiting")
    assert waiting["reason"].startswith("waiting: VC vision: 6 of 8 cpu in use, 5 asked"), waiting
    assert waiting["started"] is None and waiting["job_state"] == "queued"
    assert exp["counts"] == {"running": 1, "waiting": 1}, exp
    brief = (await svc.call("alice", "GET", f"experiments/{exp_id}?trials=false")).json()
    assert brief["counts"] == {"running": 1, "waiting": 1}
    (tmp_path / "go").write_text("")
    done = await wait_exp(svc, "alice", exp_id)
    assert done["counts"] == {"failed": 2}, done
    for t in done["trials"]:
        job = (await svc.call("alice", "GET", f"jobs/{t['job_id']}")).json()
        assert t["started"] == job["started"]  # its duration counts from its job's start
        assert t["reason"].startswith(f"job {t['job_id']} failed: "), t
        assert t["reason"].endswith(
            "last lines of its log:\nepoch 4\nepoch 5\nepoch 6\nepoch 7\nValueError: the loss is nan"
        ), t["reason"]
    second = max(done["trials"], key=lambda t: t["number"])
    first = min(done["trials"], key=lambda t: t["number"])
    assert datetime.fromisoformat(second["started"]) >= datetime.fromisoformat(first["finished"]) - timedelta(seconds=1)


async def test_stop_cancels_running_trials_and_vc_boundary(svc):
    body = experiment("sleepy", "import time; time.sleep(60)", max_trials=4)
    r = await svc.call("alice", "POST", "experiments", json=body)
    exp_id = r.json()["id"]
    deadline = time.monotonic() + 30
    while True:
        exp = (await svc.call("alice", "GET", f"experiments/{exp_id}")).json()
        if len(exp["trials"]) == 2:
            break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    for t in exp["trials"]:
        await wait_state(svc, "alice", t["job_id"], states={"running"})
    # bob is in no group of VC vision: he sees nothing and stops nothing
    assert (await svc.call("bob", "GET", f"experiments/{exp_id}")).status_code == 404
    assert (await svc.call("bob", "POST", f"experiments/{exp_id}/stop")).status_code == 404
    assert exp_id not in [e["id"] for e in (await svc.call("bob", "GET", "experiments")).json()]
    r = await svc.call("alice", "POST", f"experiments/{exp_id}/stop")
    assert r.status_code == 200 and r.json()["state"] == "stopped", r.text
    for t in exp["trials"]:
        job = await wait_state(svc, "alice", t["job_id"])
        assert job["state"] == "cancelled"
    assert (await svc.call("alice", "POST", f"experiments/{exp_id}/stop")).status_code == 409


async def test_refusals_are_sentences(svc):
    body = experiment("bad", "print(1)", tuner={"name": "Anneal"})
    r = await svc.call("alice", "POST", "experiments", json=body)
    assert r.status_code == 422 and "nearest supported tuner is TPE" in r.text, r.text
    body = experiment("bad", "print(1)", space={"x": {"_type": "gauss", "_value": [0, 1]}})
    r = await svc.call("alice", "POST", "experiments", json=body)
    assert r.status_code == 422 and "unknown _type 'gauss'" in r.text
    r = await svc.call("bob", "POST", "experiments", json=experiment("ok", "print(1)"))
    assert r.status_code == 404, r.text
    nni = "searchSpace: {lr: {_type: uniform, _value: [0, 1]}}\ntrialCommand: python3 t.py\ntuner: {name: SMAC}\n"
    r = await svc.call(
        "alice", "POST", "experiments?from=nni&vc=vision", content=nni, headers={"content-type": "application/yaml"}
    )
    assert r.status_code == 422 and "SMAC" in r.text and "TPE" in r.text, r.text


async def test_an_nni_config_notes_the_packages_its_trials_lack(svc):
    """NNI's auto-gbdt example imports nni, lightgbm, pandas and sklearn (yitong.trial_imports, as
    `yt hpo create --from` lists them): on the local backend a kernel trial runs the platform's
    Python, which has numpy but none of those, and the answer says so before any trial fails."""
    nni = (
        "experimentName: auto-gbdt\nsearchSpace: {num_leaves: {_type: randint, _value: [20, 31]}}\n"
        "trialCommand: python3 main.py\ntrialConcurrency: 1\nmaxTrialNumber: 1\n"
        "tuner: {name: TPE, classArgs: {optimize_mode: minimize}}\ntrainingService: {platform: local}\n"
        "yitong: {trial_imports: [lightgbm, nni, numpy, pandas, sklearn]}\n"
    )
    r = await svc.call(
        "alice", "POST", "experiments?from=nni&vc=vision", content=nni, headers={"content-type": "application/yaml"}
    )
    assert r.status_code in (200, 201), r.text
    exp = r.json()
    assert exp["notes"][0] == (
        "trialCodeDirectory: the trial code imports lightgbm, nni, pandas, sklearn, which the trials' environment"
        " (kernel python3: the platform's Python on this backend) does not have; every trial would fail with No"
        " module named 'lightgbm'. Install them there, or name an image that has them in"
        ' yitong.template.environment.image (docs/hpo.md, "Packages")'
    )
    assert exp["notes"][1].startswith("trialCodeDirectory: without the nni package, change the trial's three NNI calls")
    assert (await svc.call("alice", "POST", f"experiments/{exp['id']}/stop")).status_code == 200


# fails on its first run (no marker yet), succeeds when run again
FLAKY = """
import os, pathlib
from yitong_lab import hpo
marker = pathlib.Path(os.environ["MARKER"])
if not marker.exists():
    marker.write_text("ran once")
    raise SystemExit(3)
hpo.report_final(0.5)
"""


async def test_retrying_a_trials_job_revives_the_trial(svc, tmp_path):
    body = experiment("flaky", FLAKY, max_trials=1)
    body["template"]["env"]["MARKER"] = str(tmp_path / "marker")
    exp = (await svc.call("alice", "POST", "experiments", json=body)).json()
    done = await wait_exp(svc, "alice", exp["id"])
    assert done["state"] == "done" and done["counts"] == {"failed": 1}, done
    job_id = done["trials"][0]["job_id"]
    r = await svc.call("alice", "POST", f"jobs/{job_id}/retry")
    assert r.status_code == 200, r.text
    again = await wait_exp(svc, "alice", exp["id"])
    assert again["counts"] == {"complete": 1}, again
    trial = again["trials"][0]
    assert (trial["number"], trial["job_id"], trial["value"]) == (0, job_id, 0.5)
    assert again["best"]["value"] == 0.5


async def test_retrying_a_trial_of_a_stopped_experiment_says_resume_first(svc, tmp_path):
    body = experiment("stopped", "import time; time.sleep(60)", max_trials=1)
    exp = (await svc.call("alice", "POST", "experiments", json=body)).json()
    deadline = time.monotonic() + 60
    while not (trials := (await svc.call("alice", "GET", f"experiments/{exp['id']}")).json()["trials"]):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    job_id = trials[0]["job_id"]
    await wait_state(svc, "alice", job_id, ("running",))
    assert (await svc.call("alice", "POST", f"experiments/{exp['id']}/stop")).status_code == 200
    await wait_state(svc, "alice", job_id, ("cancelled",))
    r = await svc.call("alice", "POST", f"jobs/{job_id}/retry")
    assert r.status_code == 409, r.text
    assert "stopped" in r.json()["detail"] and "resume" in r.json()["detail"]
    assert (await svc.call("alice", "GET", f"jobs/{job_id}")).json()["state"] == "cancelled"  # nothing changed


async def test_trials_with_a_dataset_input_read_it_and_pin_it_while_they_run(svc):
    """A template's dataset inputs: every trial (the first pass's and the later ones, which run
    with a Session beside the pass's DB-API statements) mounts the pinned version, which cannot be
    deleted while a trial holds it and can once the experiment is done."""
    r = await svc.data.push("alice", "vision/grid", {"x.txt": b"0.25"})
    assert r.status_code == 201, r.text
    code = (
        "import os, pathlib, time; from yitong_lab import hpo; hpo.get_params(); time.sleep(0.5);"
        "hpo.report_final(float((pathlib.Path(os.environ['YITONG_INPUT_GRID']) / 'x.txt').read_text()))"
    )
    body = experiment("reader", code, max_trials=4)
    body["template"]["inputs"] = [{"dataset": "vision/grid@1"}]
    r = await svc.call("alice", "POST", "experiments", json=body)
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 60
    while not (await svc.call("alice", "GET", f"experiments/{r.json()['id']}")).json()["trials"]:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    held = await svc.call("alice", "DELETE", "datasets/vision/grid/versions/1")
    assert held.status_code == 409 and "job" in held.json()["detail"], held.text
    exp = await wait_exp(svc, "alice", r.json()["id"])
    assert exp["counts"] == {"complete": 4}, exp
    assert {t["value"] for t in exp["trials"]} == {0.25}
    jobs = [(await svc.call("alice", "GET", f"jobs/{t['job_id']}")).json() for t in exp["trials"]]
    assert {j["inputs"][0]["version"] for j in jobs} == {1}
    assert (await svc.call("alice", "DELETE", "datasets/vision/grid/versions/1")).status_code == 204
