"""Endpoints on the embedded default, end to end with real parts: a scikit-learn model trained
and saved by MLServer's own environment (``make mlserver``), registered, deployed (MLServer
1.7.1 + mlserver-sklearn as a process of the owner), and called through the platform's route by
tritonclient's HTTP client (a V2 client nobody here wrote; ``binary_data=False``): FP32, INT64
and BOOL inputs, health and metadata, error shapes, the VC boundary and the VC's quota."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from helpers import ipython

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
    while (e := proc.call("alice", "GET", "endpoints/iris").json())["state"] != "ready":
        assert time.monotonic() - started < 60, (e, (tmp_path / "data/endpoints/iris/mlserver.log").read_text()[-3000:])
        time.sleep(0.2)
    return e, time.monotonic() - started, expected


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

    # the endpoint holds an allocation in its VC; a VC whose quota is full refuses with the sentence
    allocs = [a for a in proc.call("admin", "GET", "allocations").json() if a["kind"] == "endpoint"]
    assert [(a["vc"], a["ref"]) for a in allocs] == [("vision", "endpoint/iris")]
    r = proc.call("admin", "PATCH", "vcs/vision", json={"quota": {"cpu": 1, "memory": "2Gi"}})
    assert r.status_code == 200, r.text
    r = proc.call("alice", "POST", "endpoints", json={"name": "iris2", "model": "vision/iris", "profile": "cpu-small"})
    assert r.status_code == 409 and "cpu" in r.json()["detail"], r.text
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
    assert [a for a in proc.call("admin", "GET", "allocations").json() if a["kind"] == "endpoint"] == []
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
    monkeypatch.delenv("YITONG_API_URL", raising=False)
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    monkeypatch.setenv("YT_API_URL", proc.base.rstrip("/"))
    monkeypatch.setenv("YT_TOKEN", proc.hub.tokens["alice"])
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
