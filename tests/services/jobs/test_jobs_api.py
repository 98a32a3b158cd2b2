"""Jobs over REST on the local backend: submit, logs, refusals, cancel/retry, authz, queue reasons, inputs."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx
import pytest
from jobs_helpers import py_job, wait_state

ROOT = Path(__file__).resolve().parent
FAST = {"jobs": {"poll_interval": 0.1}}


@pytest.fixture
async def svc(service_factory):
    async with service_factory(**FAST) as s:
        yield s


async def submit(svc, who, body, **kw):
    return await svc.call(who, "POST", "jobs", json=body, **kw)


async def test_submit_logs_ledger(svc):
    code = (
        "import os, pathlib; print('hello from', os.environ['YITONG_JOB_ID']);"
        "pathlib.Path(os.environ['YITONG_OUTPUT_DIR'], 'model.txt').write_text('w')"
    )
    body = py_job("hello", "vision", code, code={"commit": "abc123", "dirty_hash": "d1", "path": None})
    r = await submit(svc, "alice", body)
    assert r.status_code == 201, r.text
    job = await wait_state(svc, "alice", r.json()["id"])
    assert (job["state"], job["exit_code"], job["attempts"]) == ("succeeded", 0, 1), job
    assert job["access"] and job["hosts"]
    logs = await svc.call("alice", "GET", f"jobs/{job['id']}/logs?rank=0")
    assert logs.text.strip() == f"hello from {job['id']}"
    follow = await svc.call("alice", "GET", f"jobs/{job['id']}/logs?follow=1")
    assert "hello from" in follow.text
    record = (await svc.call("alice", "GET", f"runs/{job['runs'][0]}")).json()
    assert record["code"] == {"commit": "abc123", "dirty_hash": "d1", "path": None}
    assert record["artifacts"][0]["path"] == "model.txt" and record["exit_code"] == 0
    assert len(record["environment"]["pip_freeze_sha256"]) == 64
    assert record["parameters"]["command"][0] == body["command"][0]
    allocs = (await svc.call("admin", "GET", "allocations")).json()
    assert allocs == []  # released at the end


async def test_local_jobs_do_not_inherit_the_service_secrets(svc, monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "hub-secret")
    monkeypatch.setenv("YITONG_DATABASE_URL", "postgresql://u:pw@db/x")
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    program = "import os; print(sorted(k for k in os.environ if k.startswith(('JUPYTERHUB', 'YITONG_DATABASE', 'HARMLESS', 'YITONG_JOB_TOKEN'))))"
    r = await submit(svc, "alice", py_job("env", "vision", program))
    job = await wait_state(svc, "alice", r.json()["id"])
    assert job["state"] == "succeeded", job
    shown = (await svc.call("alice", "GET", f"jobs/{job['id']}/logs")).text.strip()
    # JUPYTERHUB_API_TOKEN is the job's own token of its owner (tests/services/jobs/test_job_tokens.py), not "hub-secret"
    assert shown == "['HARMLESS_SETTING', 'JUPYTERHUB_API_TOKEN', 'YITONG_JOB_TOKEN']"


async def test_yaml_body_and_import(svc):
    yaml_body = f"name: y1\nvc: default\nenvironment: {{kernel: python3}}\ncommand: ['{py_job('a', 'b', '0')['command'][0]}', -c, '0']\nmemory: 64Mi\n"
    r = await svc.call("bob", "POST", "jobs", content=yaml_body, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    assert (await wait_state(svc, "bob", r.json()["id"]))["state"] == "succeeded"
    text = (ROOT / "fixtures" / "openpai-single-gpu.yaml").read_text()
    r = await svc.call(
        "alice", "POST", "jobs?from=openpai&vc=vision", content=text, headers={"Content-Type": "application/yaml"}
    )
    assert r.status_code in (201, 422), r.text
    if r.status_code == 201:
        assert isinstance(r.json()["notes"], list)
        await svc.call("alice", "POST", f"jobs/{r.json()['id']}/cancel")


async def test_preview_then_submit_an_import(svc):
    """``POST /jobs/preview`` answers the converted spec and every note and queues nothing; the same
    document submitted runs on the local backend with OpenPAI's variables and its deployment's hooks."""
    text = (ROOT / "shapes" / "openpai-deployment.yaml").read_text()
    yaml_type = {"Content-Type": "application/yaml"}
    before = (await svc.call("alice", "GET", "jobs")).json()
    r = await svc.call("alice", "POST", "jobs/preview?from=openpai&vc=vision", content=text, headers=yaml_type)
    assert r.status_code == 200, r.text
    preview = r.json()
    assert preview["notes"] == [
        "deployments.unused: not chosen by defaults.deployment, not run (as in OpenPAI)",
        "name: 'deployment_job' became 'deployment-job' (Yitong names are DNS labels)",
    ]
    assert (preview["spec"]["name"], preview["spec"]["vc"], preview["resources"]) == (
        "deployment-job",
        "vision",
        {"cpu": 1.0, "memory": 512 * 2**20},
    )
    assert (await svc.call("alice", "GET", "jobs")).json() == before
    too_big = text.replace("cpu: 1, memoryMB: 512", "cpu: 64, memoryMB: 512")
    r = await svc.call("alice", "POST", "jobs/preview?from=openpai&vc=vision", content=too_big, headers=yaml_type)
    # a job the VC could never run: its spec still, with the sentence a submit is refused with
    assert (r.status_code, r.json()["refused"], r.json()["spec"]["cpu"]) == (
        200,
        "the job asks for 64 cpu; VC vision's quota is 8 cpu",
        64.0,
    )
    assert preview["refused"] is None
    r = await svc.call("alice", "POST", "jobs?from=openpai&vc=vision", content=too_big, headers=yaml_type)
    assert (r.status_code, r.json()["detail"]) == (422, "the job asks for 64 cpu; VC vision's quota is 8 cpu")
    r = await svc.call("carol", "POST", "jobs/preview?from=openpai&vc=vision", content=text, headers=yaml_type)
    assert r.status_code in (403, 404), r.text
    r = await svc.call("alice", "POST", "jobs?from=openpai&vc=vision", content=text, headers=yaml_type)
    assert r.status_code == 201, r.text
    job = await wait_state(svc, "alice", r.json()["id"])
    log = (await svc.call("alice", "GET", f"jobs/{job['id']}/logs?rank=0")).text
    assert (job["state"], log.strip()) == ("succeeded", "setup ran before the commands"), log


@pytest.mark.parametrize(
    ("who", "body", "status", "says"),
    [
        ("alice", "name: x\nvc: [unclosed", 422, "not valid YAML"),
        ("alice", {"name": "x", "vc": "nope", "environment": {"kernel": "k"}, "command": ["true"]}, 404, "no VC nope"),
        (
            "alice",
            {"name": "x; rm -rf /", "vc": "vision", "environment": {"kernel": "k"}, "command": ["true"]},
            422,
            "spec.name",
        ),
        (
            "alice",
            {"name": "x", "vc": "vision", "environment": {"kernel": "k"}, "command": ["true"], "cpu": 64},
            422,
            "quota is 8 cpu",
        ),
        (
            "alice",
            {
                "name": "x",
                "vc": "vision",
                "environment": {"kernel": "k"},
                "command": ["true"],
                "accelerator": {"type": "huawei.com/Ascend910", "count": 1},
            },
            422,
            "has no huawei.com/Ascend910",
        ),
        (
            "alice",
            {"name": "x", "vc": "vision", "environment": {"kernel": "k"}, "command": ["true"], "nodes": 2},
            422,
            "single-node",
        ),
        (
            "bob",
            {"name": "x", "vc": "vision", "environment": {"kernel": "k"}, "command": ["true"]},
            404,
            "there is no VC vision",
        ),
        (
            "alice",
            {
                "name": "x",
                "vc": "vision",
                "environment": {"kernel": "k"},
                "command": ["true"],
                "inputs": [{"dataset": "vision/missing@1"}],
            },
            404,
            "no dataset vision/missing",
        ),
        (
            "alice",
            {
                "name": "x",
                "vc": "vision",
                "environment": {"kernel": "k"},
                "command": ["true"],
                "code": {"commit": "$(x)"},
            },
            422,
            "code",
        ),
    ],
)
async def test_refusals_queue_nothing(svc, who, body, status, says):
    kw = {"content": body, "headers": {"Content-Type": "application/yaml"}} if isinstance(body, str) else {"json": body}
    r = await svc.call(who, "POST", "jobs", **kw)
    assert r.status_code == status, r.text
    assert says in r.json()["detail"]
    assert (await svc.call("admin", "GET", "jobs")).json() == []


async def test_cancel_retry_and_auto_retry(svc):
    code = "import os, time; time.sleep(30 if os.environ['YITONG_ATTEMPT'] == '1' else 0)"
    job = (await submit(svc, "alice", py_job("slow", "vision", code))).json()
    await wait_state(svc, "alice", job["id"], {"running"})
    assert (await svc.call("alice", "POST", f"jobs/{job['id']}/cancel")).status_code == 202
    done = await wait_state(svc, "alice", job["id"], timeout=20)
    assert done["state"] == "cancelled"
    assert (await svc.call("alice", "POST", f"jobs/{job['id']}/cancel")).status_code == 409
    r = await svc.call("alice", "POST", f"jobs/{job['id']}/retry")
    assert r.status_code == 200, r.text
    again = await wait_state(svc, "alice", job["id"])
    assert (again["state"], again["attempts"], len(again["runs"])) == ("succeeded", 2, 2)
    assert (await svc.call("alice", "POST", f"jobs/{job['id']}/retry")).status_code == 409
    flaky = "import os, sys; sys.exit(3 if os.environ['YITONG_ATTEMPT'] == '1' else 0)"
    job = (await submit(svc, "alice", py_job("flaky", "vision", flaky, retries=1))).json()
    done = await wait_state(svc, "alice", job["id"])
    assert (done["state"], done["attempts"]) == ("succeeded", 2)
    failing = (await submit(svc, "alice", py_job("bad", "vision", "import sys; sys.exit(5)"))).json()
    done = await wait_state(svc, "alice", failing["id"])
    assert (done["state"], done["exit_code"], done["reason"]) == ("failed", 5, "exit code 5")
    clone = await svc.call(
        "erin",
        "POST",
        f"jobs/{failing['id']}/clone",
        json={"patch": {"command": [py_job("a", "b", "")["command"][0], "-c", "0"]}},
    )
    assert clone.status_code == 201, clone.text
    assert clone.json()["user"] == "erin"
    assert (await wait_state(svc, "erin", clone.json()["id"]))["state"] == "succeeded"


async def test_authz_matrix(svc):
    job = (await submit(svc, "alice", py_job("mine", "vision", "import time; time.sleep(20)"))).json()
    jid = job["id"]
    cases = [
        ("bob", "GET", f"jobs/{jid}", 404),
        ("bob", "GET", f"jobs/{jid}/logs", 404),
        ("bob", "POST", f"jobs/{jid}/cancel", 404),
        ("bob", "POST", f"jobs/{jid}/retry", 404),
        ("bob", "POST", f"jobs/{jid}/clone", 404),
        ("dave", "GET", f"jobs/{jid}", 404),
        ("erin", "GET", f"jobs/{jid}", 200),
        ("erin", "GET", f"jobs/{jid}/logs", 200),
        ("erin", "POST", f"jobs/{jid}/cancel", 403),
        (None, "GET", f"jobs/{jid}", 401),
        ("alice", "POST", f"jobs/{jid}/metrics", 401),
    ]
    for who, method, path, status in cases:
        kw = {"json": {}} if method == "POST" else {}
        r = await svc.call(who, method, path, **kw)
        assert r.status_code == status, (who, method, path, r.text)
    assert [j["id"] for j in (await svc.call("bob", "GET", "jobs")).json()] == []
    assert [j["id"] for j in (await svc.call("erin", "GET", "jobs?vc=vision")).json()] == [jid]
    r = await svc.call("admin", "POST", f"jobs/{jid}/cancel")
    assert r.status_code == 202
    assert (await wait_state(svc, "alice", jid, timeout=20))["state"] == "cancelled"


async def test_queue_reason_and_position(svc):
    hog = (await submit(svc, "bob", py_job("hog", "nlp", "import time; time.sleep(30)", cpu=4))).json()
    await wait_state(svc, "bob", hog["id"], {"running"})
    waiting = (await submit(svc, "bob", py_job("wait", "nlp", "0", cpu=1))).json()
    second = (await submit(svc, "bob", py_job("wait2", "nlp", "0", cpu=1))).json()
    await wait_state(svc, "bob", waiting["id"], {"queued"})
    import asyncio

    for _ in range(50):
        w = (await svc.call("bob", "GET", f"jobs/{waiting['id']}")).json()
        s = (await svc.call("bob", "GET", f"jobs/{second['id']}")).json()
        if w["reason"].startswith("waiting: VC") and s["reason"].startswith("waiting: behind"):
            break
        await asyncio.sleep(0.1)
    assert w["reason"] == "waiting: VC nlp: 4 of 4 cpu in use", w
    assert w["position"] == 1
    assert s["position"] == 2 and s["reason"].startswith(f"waiting: behind job {waiting['id']}")
    await svc.call("bob", "POST", f"jobs/{hog['id']}/cancel")
    for j in (waiting, second):
        assert (await wait_state(svc, "bob", j["id"]))["state"] == "succeeded"


async def test_inputs_are_pinned_and_read_only(svc):
    r = await svc.data.push("alice", "vision/mnist", {"a.txt": b"alpha", "d/b.txt": b"beta"})
    assert r.status_code == 201, r.text
    code = (
        "import os, pathlib, time; p = pathlib.Path(os.environ['YITONG_INPUT_MNIST']);"
        "print((p / 'a.txt').read_text(), oct((p / 'a.txt').stat().st_mode & 0o222)); time.sleep(1.5)"
    )
    job = (await submit(svc, "alice", py_job("reader", "vision", code, inputs=[{"dataset": "vision/mnist@1"}]))).json()
    assert job["inputs"][0]["version"] == 1
    r = await svc.call("alice", "DELETE", "datasets/vision/mnist/versions/1")
    assert r.status_code == 409 and f"job {job['id']}" in r.json()["detail"]
    done = await wait_state(svc, "alice", job["id"])
    assert done["state"] == "succeeded", done
    assert (await svc.call("alice", "GET", f"jobs/{job['id']}/logs")).text.strip() == "alpha 0o0"
    record = (await svc.call("alice", "GET", f"runs/{done['runs'][0]}")).json()
    assert record["inputs"][0]["manifest"] == job["inputs"][0]["manifest"]
    rerun = await svc.call("alice", "POST", f"runs/{done['runs'][0]}/rerun")
    assert rerun.status_code == 201, rerun.text
    assert rerun.json()["spec"]["inputs"][0]["dataset"] == "vision/mnist@1"
    assert (await wait_state(svc, "alice", rerun.json()["id"]))["state"] == "succeeded"
    assert (await svc.call("alice", "DELETE", "datasets/vision/mnist/versions/1")).status_code == 204


async def test_a_string_command_finds_python_like_the_docs_say(svc):
    """docs/jobs.md's `command: python train.py` form: a string runs under `bash -c` (not a login
    shell, whose profile would reset PATH and print into the log) with the platform's interpreter
    first on PATH, so `python` is found and the log holds only what the program printed."""
    body = {
        "name": "doc-example",
        "vc": "vision",
        "environment": {"kernel": "python3"},
        "command": "python -c \"import sys; print('hello from', sys.prefix)\"",
        "memory": "64Mi",
    }
    r = await submit(svc, "alice", body)
    assert r.status_code == 201, r.text
    job = await wait_state(svc, "alice", r.json()["id"])
    log = (await svc.call("alice", "GET", f"jobs/{job['id']}/logs?rank=0")).text
    assert (job["state"], job["exit_code"]) == ("succeeded", 0), log
    assert log.strip().splitlines() == [f"hello from {sys.prefix}"]


async def test_without_the_fork_server_each_wrapper_is_its_own_interpreter(service_factory, monkeypatch):
    """The fallback of the local backend (jobs/runner_local.py, when its fork server cannot
    start): the wrapper is a new interpreter, this process's child, and the job runs as usual."""
    import os

    from yitong_services.jobs import runner_local

    monkeypatch.setattr(runner_local, "FORK_SERVER", False)
    program = (
        "import os; w = os.getppid(); print(open(f'/proc/{w}/stat').read().rsplit(')', 1)[1].split()[1],"
        " '-S' in open(f'/proc/{w}/cmdline').read().split(chr(0)))"
    )
    async with service_factory(**FAST) as svc:
        r = await submit(svc, "alice", py_job("nofork", "vision", program))
        job = await wait_state(svc, "alice", r.json()["id"])
        assert job["state"] == "succeeded", job
        parent, interpreter = (await svc.call("alice", "GET", f"jobs/{job['id']}/logs")).text.split()
    # the wrapper's parent is this (in-process) service, and it is `python -I -S -c ...`
    assert (int(parent), interpreter) == (os.getpid(), "True")


async def test_on_end_listeners_see_the_committed_end_and_a_failing_one_loses_nothing(service_factory):
    """``JobManager.on_end`` is called with the job's id once the end is committed (a fresh
    session reads the final state); a listener that raises is logged, the end stays recorded, and
    a job a listener queues is admitted and started in the same tick (no poll: the interval is 30 s)."""
    from sqlalchemy import select

    from yitong_services.jobs.models import Job

    async with service_factory(jobs={"poll_interval": 30}) as svc:
        mgr = svc.app.state.jobs
        seen: list[tuple[int, str]] = []
        follow: dict[str, int] = {}

        def read(job_id: int) -> None:
            with mgr.db.session() as s:
                seen.append((job_id, s.scalar(select(Job.state).where(Job.id == job_id))))

        def broken(job_id: int) -> None:
            raise RuntimeError("a listener's own bug")

        def queue_next(job_id: int) -> None:  # what the HPO driver does: queue the next job
            if follow:
                return
            from yitong_services.core.authz import Person
            from yitong_services.jobs import records
            from yitong_services.jobs.spec import spec_from_dict

            with mgr.db.locked("~jobs") as s:
                person = Person(name="alice", groups=("vision", "everyone"))
                spec = spec_from_dict(py_job("next", "vision", "pass"))
                follow["id"] = records.create(s, person, spec, {}, svc.ctx.inventory, mgr.backend.name).id

        mgr.on_end.extend([read, broken, queue_next])
        job = (await submit(svc, "alice", py_job("first", "vision", "pass"))).json()
        done = await wait_state(svc, "alice", job["id"], timeout=20)
        assert done["state"] == "succeeded"
        # the listeners run after the end is committed, so the route can say "succeeded" before
        # they have (seen on PostgreSQL: follow was still empty); they run in order
        for _ in range(100):
            if "id" in follow:
                break
            await asyncio.sleep(0.05)
        assert (job["id"], "succeeded") in seen
        nxt = await wait_state(svc, "alice", follow["id"], timeout=20)  # started by the same tick, not a poll
        assert nxt["state"] == "succeeded"


def _docs_result_snippet() -> str:
    """docs/jobs.md's example of a result written to ``$YITONG_RESULT_FD``, as it is there."""
    text = (ROOT.parent.parent.parent / "docs" / "jobs.md").read_text()
    after = text.split("**A result without a round trip**", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


async def test_a_jobs_result_fd_joins_its_run_metrics_and_a_bad_one_is_dropped(svc):
    """``$YITONG_RESULT_FD`` (docs/jobs.md's snippet, run as it is): the line the job writes is in
    its run's metrics when it ends, and a process it leaves behind holding the pipe does not hold
    its end up. What is not a map of names to finite numbers is dropped whole, and the job's end is
    recorded as usual (the job's code is hostile: it may write anything there)."""
    linger = (
        "\nimport subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(45)'],"
        " pass_fds=(int(os.environ['YITONG_RESULT_FD']),), start_new_session=True)\n"
    )
    write = "import os; w = lambda b: os.write(int(os.environ['YITONG_RESULT_FD']), b); "
    bad = {
        "nan": write + "w(b'{\"x\": NaN}\\n')",
        "many": write + "import json; w(json.dumps({f'm{i}': i for i in range(100)}).encode() + b'\\n')",
        "list": write + "w(b'[1, 2]\\n')",
        "unfinished": write + "w(b'{\"x\": 1}')",
        "overlong": write + "w(b'{\"x\": \"' + b'a' * 70000 + b'\"}\\n')",
        "garbage-last": write + "w(b'{\"x\": 1}\\n'); w(b'\\xff\\xfe\\n')",
        "not-a-number": write + 'w(b\'{"x": "high"}\\n\')',
    }
    start = time.monotonic()
    good = (await submit(svc, "alice", py_job("result", "vision", _docs_result_snippet() + linger))).json()["id"]
    ids = {name: (await submit(svc, "alice", py_job(name, "vision", code))).json()["id"] for name, code in bad.items()}
    job = await wait_state(svc, "alice", good)
    assert job["state"] == "succeeded" and time.monotonic() - start < 30, job  # not 45 s: no wait for EOF
    record = (await svc.call("alice", "GET", f"runs/{job['runs'][0]}")).json()
    assert record["metrics"] == {"accuracy": 0.97}
    for name, job_id in ids.items():
        job = await wait_state(svc, "alice", job_id)
        assert (job["state"], job["exit_code"]) == ("succeeded", 0), (name, job)
        record = (await svc.call("alice", "GET", f"runs/{job['runs'][0]}")).json()
        assert record["metrics"] == {}, name


async def test_a_jobs_metrics_are_bounded_over_all_its_calls_and_a_refusal_loses_nothing(svc, tmp_path):
    """``POST /jobs/{id}/metrics`` with a running job's own token (what ``yitong_lab.log_metrics``
    sends; the job hands it out through its log, as hostile code may): each call is bounded by the
    request's size, and their sum by the run's (jobs/ledger.py: 1024 names, 1 MiB as JSON, names
    of at most 256 characters). A job that keeps adding names is refused with a 422 that says
    which bound, and the metrics it had stay as they were; the result it writes to its result fd
    at its end is held to the same bound (dropped whole, as a bad one is)."""
    from yitong_services.jobs import ledger

    go = tmp_path / "go"
    code = (
        "import os, pathlib, time\n"
        "print(os.environ['YITONG_JOB_TOKEN'], flush=True)\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.05)\n"
        "os.write(int(os.environ['YITONG_RESULT_FD']), b'{\"r1\": 1, \"r2\": 2}\\n')\n"
    )
    job_id = (await submit(svc, "alice", py_job("many", "vision", code))).json()["id"]
    token = ""
    for _ in range(200):
        token = (await svc.call("alice", "GET", f"jobs/{job_id}/logs")).text.strip()
        if token:
            break
        await asyncio.sleep(0.05)
    as_job = {"headers": {"Authorization": f"token {token}"}}

    async def post(metrics: dict) -> httpx.Response:
        return await svc.call(None, "POST", f"jobs/{job_id}/metrics", json=metrics, **as_job)

    held = {f"m{i}": i for i in range(ledger.RUN_METRIC_NAMES - 1)}
    assert (await post(held)).status_code == 200
    assert (await post({"m0": -1.5})).json()["metrics"]["m0"] == -1.5  # a name it has: replaced
    refusals = {
        "would hold 1025 metric names; at most 1024": {"n0": 1, "n1": 2},
        "must be 1 to 256 characters": {"x" * 300: 1},
        "bytes as JSON; at most 1048576": {"m2": "b" * 600_000},  # each call under the body's 1 MiB
    }
    assert (await post({"m1": "a" * 500_000})).status_code == 200
    for sentence, metrics in refusals.items():
        r = await post(metrics)
        assert r.status_code == 422 and sentence in r.json()["detail"], r.text
    metrics = (await post({"m3": 3})).json()["metrics"]
    assert len(metrics) == ledger.RUN_METRIC_NAMES - 1 and metrics["m0"] == -1.5 and "n0" not in metrics
    assert metrics["m1"] == "a" * 500_000 and metrics["m2"] == 2
    # the job's own result at its end (its result fd) is held to the same bound: dropped whole
    go.touch()
    job = await wait_state(svc, "alice", job_id)
    assert job["state"] == "succeeded", job
    ended = (await svc.call("alice", "GET", f"runs/{job['runs'][0]}")).json()["metrics"]
    assert len(ended) == ledger.RUN_METRIC_NAMES - 1 and "r1" not in ended and ended["m3"] == 3


@pytest.mark.parametrize("fails", ["before its commit", "after its commit"])
async def test_an_attempt_whose_start_is_not_recorded_is_recorded_later_and_runs_once(
    svc, tmp_path, monkeypatch, fails
):
    """The database fails while a started attempt is recorded (simulated: ``_started`` raises on
    its first call, before or after the commit; an outage cannot be brought about on cue). The
    attempt runs on and is not started a second time: a later tick records it (or finds it
    recorded) and the job ends as it would have, having run once."""
    mgr = svc.app.state.jobs
    real, calls = mgr._started, []

    def flaky(job_id, ref, facts):
        calls.append(job_id)
        if len(calls) > 1:
            return real(job_id, ref, facts)
        if fails == "after its commit":
            real(job_id, ref, facts)
        raise RuntimeError("the database went away")

    monkeypatch.setattr(mgr, "_started", flaky)
    runs = tmp_path / "runs"
    program = f"import time; open({str(runs)!r}, 'a').write('ran\\n'); time.sleep(1)"
    r = await submit(svc, "alice", py_job("once", "vision", program))
    job = await wait_state(svc, "alice", r.json()["id"])
    assert job["state"] == "succeeded", job
    assert runs.read_text() == "ran\n"
    assert len(calls) == (2 if fails == "before its commit" else 1)
    assert not mgr._unrecorded
    assert (job["attempts"], len(job["runs"])) == (1, 1)  # one attempt, one ledger entry


async def test_an_unrecorded_attempt_whose_job_ended_meanwhile_is_stopped(svc, tmp_path, monkeypatch):
    """A started attempt that could not be recorded, whose job then ends elsewhere (another
    service on the same database, an admin's repair; simulated: ``_started`` ends the job in its
    own transaction and raises, as an outage cannot be brought about on cue): the next tick does
    not record it, and stops it."""
    from sqlalchemy import update

    from yitong_services.core.models import utcnow
    from yitong_services.jobs.models import Job

    mgr = svc.app.state.jobs
    refs: list[str] = []

    def ended_elsewhere(job_id, ref, facts):
        refs.append(ref)
        with mgr.db.writing() as s:
            s.execute(update(Job).where(Job.id == job_id).values(state="cancelled", finished=utcnow()))
        raise RuntimeError("the database went away")

    monkeypatch.setattr(mgr, "_started", ended_elsewhere)
    started, done = tmp_path / "started", tmp_path / "done"
    program = (
        f"import os, pathlib, time; pathlib.Path({str(started)!r}).write_text(str(os.getpid())); "
        f"time.sleep(60); pathlib.Path({str(done)!r}).touch()"
    )
    r = await submit(svc, "alice", py_job("elsewhere", "vision", program))
    assert r.status_code == 201, r.text
    # the attempt's wrapper (its pid leads the ref) ends once the job is stopped; the stop may come
    # before the job's program has run a line
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        wrapper = refs[0].split(":")[0] if refs else ""
        if wrapper and not mgr._unrecorded and not Path(f"/proc/{wrapper}").exists():
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"the attempt {refs} was not stopped (unrecorded: {mgr._unrecorded})")
    assert len(refs) == 1 and not done.exists()  # recorded never, started once, stopped
    assert not started.exists() or not Path(f"/proc/{started.read_text()}").exists()
    job = (await svc.call("alice", "GET", f"jobs/{r.json()['id']}")).json()
    assert job["state"] == "cancelled" and job["runs"] == [], job
