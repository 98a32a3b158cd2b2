"""Endpoints on the embedded default, end to end with real parts: a scikit-learn model trained
and saved by MLServer's own environment (``make mlserver``), registered, deployed (MLServer
1.7.1 + mlserver-sklearn as a process of the owner), and called through the platform's route by
tritonclient's HTTP client (a V2 client nobody here wrote; ``binary_data=False``): FP32, INT64
and BOOL inputs, health and metadata, error shapes, the VC boundary and the VC's quota."""

from __future__ import annotations

import shlex
import subprocess
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from helpers import ipython, yt_as

from tests.services.jobs.test_jobs_process import Proc

ROOT = Path(__file__).resolve().parents[3]
MLSERVER_PY = ROOT / ".venv-mlserver" / "bin" / "python"
TRAIN = """
import sys, joblib, numpy as np
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(0)
x = rng.normal(size=(300, 4)).astype("float32")
y = (x[:, 0] + 2 * x[:, 1] > 0).astype("int64") + (x[:, 2] > 1)
model = LogisticRegression(max_iter=500).fit(x, y)
joblib.dump(model, sys.argv[1] + "/model.joblib")
probe = np.array([[0.5, 1.0, 2.0, -1.0], [-2.0, -1.0, 0.0, 0.0], [1, 1, 1, 1]], dtype="float32")
print(",".join(str(int(v)) for v in model.predict(probe)))
print(",".join(str(int(v)) for v in model.predict(np.array([[1, 0, 1, 0]], dtype=bool))))
"""
PROBE = np.array([[0.5, 1.0, 2.0, -1.0], [-2.0, -1.0, 0.0, 0.0], [1, 1, 1, 1]], dtype=np.float32)

pytestmark = pytest.mark.skipif(not MLSERVER_PY.exists(), reason="run `make mlserver` (MLServer's own environment)")


@pytest.fixture
def proc(hub, db_url, tmp_path):
    p = Proc(hub, db_url, tmp_path)
    p.start()
    yield p
    for e in p.call("admin", "GET", "endpoints").json():
        p.call("admin", "DELETE", f"endpoints/{e['name']}")
    p.stop()


def register_sklearn(proc, tmp_path) -> list[str]:
    """Train in MLServer's environment, register as vision/iris v1; the expected predictions."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    out = subprocess.run([MLSERVER_PY, "-c", TRAIN, str(model_dir)], capture_output=True, text=True, check=True)
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Models

    with Client(proc.base.rstrip("/"), proc.hub.tokens["alice"]) as c:
        signature = {"inputs": [{"name": "predict", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}
        v = Models(c).register(
            "vision/iris", model_dir, framework="sklearn", format="joblib", signature=signature, progress=None
        )
    assert v["number"] == 1
    return out.stdout.split()


def deploy(proc, tmp_path) -> tuple[dict, float, list[str]]:
    expected = register_sklearn(proc, tmp_path)
    started = time.monotonic()
    r = proc.call("alice", "POST", "endpoints", json={"name": "iris", "model": "vision/iris@1", "profile": "cpu-small"})
    assert r.status_code == 201, r.text
    e = wait_endpoint(proc, "iris", lambda e: e["state"] == "ready")
    return e, time.monotonic() - started, expected


def wait_endpoint(proc, name: str, done, timeout: float = 90, who: str = "alice") -> dict:
    started = time.monotonic()
    while not done(e := proc.call(who, "GET", f"endpoints/{name}").json()):
        assert time.monotonic() - started < timeout, (e, proc.log.read_text()[-3000:])
        time.sleep(0.2)
    return e


def wait_for(what, timeout: float = 60):
    started = time.monotonic()
    while not (got := what()):
        assert time.monotonic() - started < timeout
        time.sleep(0.2)
    return got


def test_v2_conformance_through_the_platform(proc, tmp_path):
    import tritonclient.http as th
    from tritonclient.utils import InferenceServerException

    e, ready_s, expected = deploy(proc, tmp_path)
    assert (e["model"], e["version"], e["owner"]) == ("vision/iris", 1, "alice")
    print(f"click-to-ready {ready_s:.1f}s")
    url = f"127.0.0.1:{proc.port}/services/yitong/api/v1/endpoints/iris"
    auth = {"Authorization": f"token {proc.hub.tokens['alice']}"}
    client = th.InferenceServerClient(url=url)
    assert client.is_server_live(headers=auth) and client.is_server_ready(headers=auth)
    assert client.is_model_ready("iris", headers=auth)
    meta = client.get_model_metadata("iris", headers=auth)
    assert meta["name"] == "iris" and meta["platform"] == ""

    def infer(array, datatype, headers=auth, model="iris"):
        x = th.InferInput("predict", list(array.shape), datatype)
        x.set_data_from_numpy(array, binary_data=False)
        out = th.InferRequestedOutput("predict", binary_data=False)
        return client.infer(model, [x], outputs=[out], headers=headers).as_numpy("predict")

    got = infer(PROBE, "FP32")
    assert [str(int(v)) for v in got.ravel()] == expected[0].split(",")
    got = infer(PROBE.round().astype(np.int64), "INT64")  # integers: the same classes as their float values
    assert got.shape[0] == 3
    got = infer(np.array([[True, False, True, False]]), "BOOL")
    assert [str(int(v)) for v in got.ravel()] == expected[1].split(",")

    # error shapes: a 4xx with the V2 error JSON, never a 500: a shape the signature does not
    # allow is refused by the platform (MLServer itself answers 500 from inside the runtime)
    with pytest.raises(InferenceServerException) as wrong:
        infer(np.zeros((2, 3), dtype=np.float32), "FP32")  # 3 features, the model takes 4
    assert wrong.value.status() == "400", str(wrong.value)
    assert "has shape [2, 3]; the model takes [-1, 4]" in str(wrong.value)
    with pytest.raises(InferenceServerException) as unknown:
        infer(PROBE, "FP32", model="nope")
    assert unknown.value.status() == "404" and "nope" in str(unknown.value)
    # another VC's person: the protocol's error shape, and nothing about the endpoint
    r = proc.call("bob", "POST", "endpoints/iris/v2/models/iris/infer", json={"inputs": []})
    assert r.status_code == 404 and r.json() == {"error": "there is no endpoint iris"}
    for method, path in (
        ("GET", "endpoints/iris"),
        ("GET", "endpoints/iris/v2/health/ready"),
        ("DELETE", "endpoints/iris"),
    ):
        assert httpx.request(method, proc.base + path).status_code == 401  # anonymous
    assert proc.call("bob", "GET", "endpoints/iris").status_code == 404
    assert proc.call("admin", "GET", "endpoints/iris").json()["state"] == "ready"
    assert proc.call("admin", "GET", "endpoints/iris/v2/health/ready").status_code == 200
    r = proc.call("alice", "GET", "endpoints/nope/v2/health/ready")
    assert r.status_code == 404 and r.json() == {"error": "there is no endpoint nope"}

    # the endpoint's replica is a job of alice in its VC, holding the job's allocation
    [replica] = e["replicas"]
    allocs = [a for a in proc.call("admin", "GET", "allocations").json() if a["kind"] == "job"]
    assert [(a["vc"], a["ref"], a["user"]) for a in allocs] == [("vision", str(replica["job"]), "alice")]
    assert (replica["version"], replica["weight"], replica["routed"]) == (1, 100, True)
    assert e["traffic"] == {"v1": 100}
    # a request the VC's quota can never hold is refused at once; nothing is queued
    r = proc.call("admin", "PATCH", "vcs/vision", json={"quota": {"cpu": 1, "memory": "1Gi"}})
    assert r.status_code == 200, r.text
    r = proc.call("alice", "POST", "endpoints", json={"name": "iris2", "model": "vision/iris", "profile": "cpu-small"})
    assert r.status_code == 422 and "VC vision's quota is 1Gi memory" in r.json()["detail"], r.text
    assert proc.call("bob", "DELETE", "endpoints/iris").status_code == 404
    for path in ("models/vision/iris/versions/1", "models/vision/iris"):  # not from under a running endpoint
        r = proc.call("alice", "DELETE", path)
        assert r.status_code == 409 and r.json()["detail"] == (
            "model vision/iris is served by endpoint iris; delete it first"
        ), r.text


def test_yt_deploy_and_magic(proc, tmp_path, monkeypatch, capsys):
    from yitong_lab.cli.grammar import run

    deploy(proc, tmp_path)
    monkeypatch.delenv("YITONG_API_URL", raising=False)
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    env = {"YT_API_URL": proc.base.rstrip("/"), "YT_TOKEN": proc.hub.tokens["alice"]}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert run(["deploy", "ls"]) == 0
    assert capsys.readouterr().out == (
        "ENDPOINT  MODEL        VERSION  VC      STATE\niris      vision/iris  v1       vision  ready\n"
    )
    magic = ipython("%yt deploy show iris", **env)
    assert "State:     ready\n" in magic.stdout and "URL:       endpoints/iris/v2/models/iris" in magic.stdout, magic
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Endpoints

    with Client(env["YT_API_URL"], env["YT_TOKEN"]) as c:
        out = Endpoints(c).infer(
            "iris", [{"name": "predict", "shape": [1, 4], "datatype": "FP32", "data": [1, 1, 1, 1]}]
        )
    assert out["model_name"] == "iris" and len(out["outputs"][0]["data"]) == 1
    assert run(["deploy", "create", "iris", "vision/iris"]) == 1
    assert capsys.readouterr().err == "yt: endpoint iris already exists\n"
    assert run(["deploy", "delete", "iris"]) == 0
    assert capsys.readouterr().out == "deleted endpoint iris\n"
    assert proc.call("alice", "DELETE", "endpoints/iris").status_code == 404
    wait_for(lambda: [a for a in proc.call("admin", "GET", "allocations").json() if a["kind"] == "job"] == [])
    r = proc.call("alice", "GET", "endpoints/iris/v2/health/ready")
    assert r.status_code == 404


ONNX_READY = pytest.mark.skipif(
    subprocess.run([MLSERVER_PY, "-c", "import skl2onnx, onnxruntime"], capture_output=True).returncode != 0
    if MLSERVER_PY.exists()
    else True,
    reason="skl2onnx and onnxruntime in MLServer's environment (make mlserver)",
)


@ONNX_READY
def test_convert_to_onnx_checked_and_registered_with_lineage(proc, tmp_path, monkeypatch, capsys):
    from yitong_lab.cli.grammar import run

    register_sklearn(proc, tmp_path)
    yt_as(monkeypatch, proc.base, proc.hub.tokens["alice"])
    assert run(["model", "convert", "vision/iris@1", "--python", str(MLSERVER_PY)]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.startswith("registered vision/iris v2 (ONNX of vision/iris@1): 64 sample rows agree"), out
    v = proc.call("alice", "GET", "models/vision/iris/versions/2").json()
    assert (v["framework"], v["format"], v["files"]) == ("onnx", "onnx", 1)
    assert v["lineage"]["converted_from"] == "vision/iris@1" and v["lineage"]["check"]["labels_equal"] is True
    assert v["signature"]["inputs"][0]["shape"] == [-1, 4]
    # converting the ONNX version again is refused with a sentence
    assert run(["model", "convert", "vision/iris@2", "--python", str(MLSERVER_PY)]) == 1
    assert "ONNX conversion takes sklearn" in capsys.readouterr().err


CONSTANT = """
import sys, joblib, numpy as np
from sklearn.dummy import DummyClassifier
x = np.zeros((4, 4), dtype="float32")
for n, out in enumerate(sys.argv[1:]):
    joblib.dump(DummyClassifier(strategy="constant", constant=n).fit(x, [0, 1, 2, n]), out + "/model.joblib")
"""
INFER = {"inputs": [{"name": "predict", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}


def register_constants(proc, tmp_path, count: int, model: str = "vision/const") -> None:
    """``model`` v1..v<count>: version n predicts n - 1 for every row."""
    dirs = [tmp_path / f"const{n}" for n in range(1, count + 1)]
    for d in dirs:
        d.mkdir()
    subprocess.run([MLSERVER_PY, "-c", CONSTANT, *map(str, dirs)], capture_output=True, text=True, check=True)
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Models

    signature = {"inputs": [{"name": "predict", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}
    with Client(proc.base.rstrip("/"), proc.hub.tokens["alice"]) as c:
        for d in dirs:
            Models(c).register(model, d, framework="sklearn", format="joblib", signature=signature, progress=None)


class Caller(threading.Thread):
    """Sends infer requests one after another until stopped; keeps (status, model_version, prediction)."""

    def __init__(self, proc, name: str) -> None:
        super().__init__(daemon=True)
        self.url = proc.base + f"endpoints/{name}/v2/models/{name}/infer"
        self.headers = {"Authorization": f"token {proc.hub.tokens['alice']}"}
        self.seen: list[tuple[int, str, int | None]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        with httpx.Client(headers=self.headers, timeout=30) as c:
            while not self.halt.is_set():
                try:
                    r = c.post(self.url, json=INFER)
                except httpx.HTTPError as e:
                    self.seen.append((0, repr(e), None))
                    continue
                doc = r.json() if r.status_code == 200 else {}
                data = doc.get("outputs", [{}])[0].get("data", [None])
                self.seen.append((r.status_code, doc.get("model_version", r.text), data[0]))

    def stop(self) -> list[tuple[int, str, int | None]]:
        self.halt.set()
        self.join(30)
        return self.seen


def test_endpoint_queues_like_a_job_until_the_quota_frees(proc, tmp_path):
    register_constants(proc, tmp_path, 1)
    r = proc.call("admin", "PATCH", "vcs/vision", json={"quota": {"cpu": 1, "memory": "4Gi"}})
    assert r.status_code == 200, r.text
    job = {"name": "hog", "vc": "vision", "environment": {"kernel": "python3"}, "command": ["sleep", "600"], "cpu": 1}
    r = proc.call("alice", "POST", "jobs", json=job)
    assert r.status_code == 201, r.text
    hog = r.json()["id"]
    proc.wait("alice", hog, states=("running",))
    r = proc.call("alice", "POST", "endpoints", json={"name": "q", "model": "vision/const@1", "profile": "cpu-small"})
    assert r.status_code == 201, r.text
    e = wait_endpoint(proc, "q", lambda e: e["reason"].startswith("waiting: VC vision"))
    assert e["state"] == "queued" and "cpu" in e["reason"], e
    assert e["replicas"][0]["job_state"] == "queued"
    queued = proc.call("alice", "GET", f"jobs/{e['replicas'][0]['job']}").json()
    assert (queued["state"], queued["reason"]) == ("queued", e["reason"])  # the same words as the job's
    assert proc.call("alice", "POST", f"jobs/{hog}/cancel").status_code == 202
    e = wait_endpoint(proc, "q", lambda e: e["state"] == "ready")
    r = proc.call("alice", "POST", "endpoints/q/v2/models/q/infer", json=INFER)
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [0], r.text


def test_rolling_and_canary_leave_no_request_unanswered(proc, tmp_path, monkeypatch, capsys):
    register_constants(proc, tmp_path, 3)
    r = proc.call("alice", "PUT", "models/vision/const/aliases/production", json={"version": 3})
    assert r.status_code == 200, r.text
    body = {"name": "roll", "model": "vision/const@1", "profile": "cpu-small", "replicas": 2}
    r = proc.call("alice", "POST", "endpoints", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["scale"] == 2 and [x["version"] for x in r.json()["replicas"]] == [1, 1]
    wait_endpoint(proc, "roll", lambda e: e["state"] == "ready" and e["reason"] == "")

    # a full roll to v2 while a client calls without a pause
    caller = Caller(proc, "roll")
    caller.start()
    wait_for(lambda: len(caller.seen) >= 20)
    r = proc.call("alice", "POST", "endpoints/roll/deploy", json={"model": "vision/const@2"})
    assert r.status_code == 200, r.text
    assert r.json()["traffic"] == {"v2": 100} and r.json()["state"] == "ready"  # v1 answers meanwhile
    e = wait_endpoint(proc, "roll", lambda e: [x["version"] for x in e["replicas"]] == [2, 2] and e["reason"] == "")
    count = len(caller.seen)
    wait_for(lambda: len(caller.seen) >= count + 20)
    seen = caller.stop()
    assert [s for s in seen if s[0] != 200] == []  # zero failures
    predictions = [s[2] for s in seen]
    first_v2 = predictions.index(1)
    assert set(predictions[:first_v2]) == {0} and set(predictions[first_v2:]) == {1}, predictions
    assert {s[1] for s in seen} == {"v1", "v2"} and e["version"] == 2
    v1_jobs = [j for j in proc.call("alice", "GET", "jobs").json() if j["name"] == "roll-v1"]
    assert len(v1_jobs) == 2
    for job in v1_jobs:
        assert proc.wait("alice", job["id"])["state"] == "cancelled"  # drained, then stopped

    # a canary: v3 takes 10 of every 100 requests, v2 the rest
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Endpoints

    with Client(proc.base.rstrip("/"), proc.hub.tokens["alice"]) as c:  # the SDK sends {"traffic": {"v3": 10}}
        e = Endpoints(c).deploy("roll", "vision/const@production", canary=10)
    assert e["traffic"] == {"v2": 90, "v3": 10}, e
    wait_endpoint(proc, "roll", lambda e: all(x["routed"] for x in e["replicas"]) and len(e["replicas"]) == 4)
    caller = Caller(proc, "roll")
    caller.start()
    wait_for(lambda: len(caller.seen) >= 300)
    seen = caller.stop()[:300]
    assert [s for s in seen if s[0] != 200] == []
    share = [s[2] for s in seen].count(2) / len(seen)
    assert 0.07 <= share <= 0.13, share  # the weighted split, within tolerance: of requests, not of replicas
    # promote the canary with `yt deploy roll` (it waits for the drain): every request still answered
    from yitong_lab.cli.grammar import run

    yt_as(monkeypatch, proc.base, proc.hub.tokens["alice"])
    caller = Caller(proc, "roll")
    caller.start()
    wait_for(lambda: len(caller.seen) >= 5)
    assert run(["deploy", "roll", "roll", "vision/const@3"]) == 0
    assert capsys.readouterr().out == "endpoint roll: v3 100%: ready\n"
    e = proc.call("alice", "GET", "endpoints/roll").json()
    assert [x["version"] for x in e["replicas"]] == [3, 3]
    seen = caller.stop()
    assert seen and [s for s in seen if s[0] != 200] == [] and seen[-1][2] == 2
    # refusals with a sentence: another model, a share of another version, another VC's person
    r = proc.call("alice", "POST", "endpoints/roll/deploy", json={"model": "vision/iris@1"})
    assert r.status_code == 404, r.text
    r = proc.call("alice", "POST", "endpoints/roll/deploy", json={"model": "vision/const@1", "traffic": {"v2": 5}})
    assert r.status_code == 422 and r.json()["detail"] == (
        "traffic names v2; give the share of the deployed version v1 only"
    )
    r = proc.call("bob", "POST", "endpoints/roll/deploy", json={"model": "vision/const@1"})
    assert r.status_code == 404 and r.json()["detail"] == "there is no endpoint roll"


def docs_scale_commands() -> list[str]:
    """The commands of docs/models.md's "Replicas and scaling" block."""
    section = (ROOT / "docs" / "models.md").read_text().split("### Replicas and scaling", 1)[1]
    block = section.split("```\n", 2)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("yt ")]


def test_replicas_answer_while_one_stops_queue_past_the_quota_and_scale_down(proc, tmp_path, monkeypatch, capsys):
    from yitong_lab.cli.grammar import run

    register_constants(proc, tmp_path, 1, "vision/iris")
    create, show, scale_up, scale_down = (shlex.split(c)[1:] for c in docs_scale_commands())
    yt_as(monkeypatch, proc.base, proc.hub.tokens["alice"])
    assert run(create) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("endpoint iris serves vision/iris v1: ready")
    e = wait_endpoint(proc, "iris", lambda e: e["reason"] == "" and sum(x["routed"] for x in e["replicas"]) == 2)
    assert e["state"] == "ready" and e["scale"] == 2 and e["traffic"] == {"v1": 100}
    assert run(show) == 0
    jobs = [x["job"] for x in e["replicas"]]
    assert f"Replicas:  2 per version: v1 job {jobs[0]} running (routed), v1 job {jobs[1]} running (routed)\n" in (
        capsys.readouterr().out
    )

    # one replica's job is cancelled while a client calls without a pause: the other answers
    caller = Caller(proc, "iris")
    caller.start()
    wait_for(lambda: len(caller.seen) >= 20)
    assert proc.call("alice", "POST", f"jobs/{jobs[0]}/cancel").status_code == 202
    e = wait_endpoint(proc, "iris", lambda e: [x["job"] for x in e["replicas"]] == [jobs[1]])
    assert e["state"] == "ready" and e["reason"] == "v1: 1 of 2 replicas run (one ended); scale again to replace it"
    count = len(caller.seen)
    wait_for(lambda: len(caller.seen) >= count + 20)
    seen = caller.stop()
    assert [s for s in seen if s[0] != 200] == [] and {s[2] for s in seen} == {0}

    # scaled past the VC's quota (2 cpu: 2 of the 3 replicas fit): the third queues with a sentence
    r = proc.call("admin", "PATCH", "vcs/vision", json={"quota": {"cpu": 2, "memory": "16Gi"}})
    assert r.status_code == 200, r.text
    assert run(scale_up) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("endpoint iris: 3 replicas per version: ready (v1: 1 of 3 replicas ready")
    e = wait_endpoint(proc, "iris", lambda e: sum(x["routed"] for x in e["replicas"]) == 2 and "queued" in e["reason"])
    queued = [x for x in e["replicas"] if x["job_state"] == "queued"]
    assert len(queued) == 1 and queued[0]["job_reason"].startswith("waiting: VC vision"), e
    assert e["state"] == "ready" and e["reason"] == f"v1: 2 of 3 replicas ready; queued: {queued[0]['job_reason']}"
    assert e["scale"] == 3 and len(e["replicas"]) == 3
    # refusals: past the bound, another VC's person (as for no endpoint)
    r = proc.call("alice", "POST", "endpoints/iris/scale", json={"replicas": 9})
    assert r.status_code == 422, r.text
    r = proc.call("bob", "POST", "endpoints/iris/scale", json={"replicas": 1})
    assert r.status_code == 404 and r.json()["detail"] == "there is no endpoint iris"

    # scale down under traffic: the queued replica stops first, then a routed one drains
    caller = Caller(proc, "iris")
    caller.start()
    wait_for(lambda: len(caller.seen) >= 5)
    assert run(scale_down) == 0, capsys.readouterr().err
    assert capsys.readouterr().out == "endpoint iris: 1 replicas per version: ready\n"
    e = proc.call("alice", "GET", "endpoints/iris").json()
    assert len(e["replicas"]) == 1 and e["replicas"][0]["routed"]
    seen = caller.stop()
    assert seen and [s for s in seen if s[0] != 200] == []
    for job in [j for j in proc.call("alice", "GET", "jobs").json() if j["name"] == "iris-v1"]:
        if job["id"] != e["replicas"][0]["job"]:
            assert proc.wait("alice", job["id"])["state"] == "cancelled"
    wait_for(lambda: len([a for a in proc.call("admin", "GET", "allocations").json() if a["kind"] == "job"]) == 1)

    # a deploy names the count too (here of the version it already serves: back to two)
    r = proc.call("alice", "POST", "endpoints/iris/deploy", json={"model": "vision/iris@1", "replicas": 2})
    assert r.status_code == 200 and r.json()["scale"] == 2 and len(r.json()["replicas"]) == 2, r.text
    wait_endpoint(proc, "iris", lambda e: e["reason"] == "" and sum(x["routed"] for x in e["replicas"]) == 2)
