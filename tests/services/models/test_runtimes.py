"""The runtimes beyond scikit-learn, end to end with real parts: tiny XGBoost and LightGBM models
and a custom-Python ``MLModel`` made in MLServer's own environment (``make mlserver``), a PyTorch
module exported with torch.export, converted to ONNX (torch.onnx) and served by the platform's
ONNX runtime; each registered, deployed (MLServer 1.7.1 as a process of the owner) and called
through the platform's route by tritonclient's HTTP client (``binary_data=False``), its answer
compared with the library's own predict. Then the refusals: an unknown framework names the
supported ones, a custom file without one ``MLModel`` class is refused before anything starts.
Nothing is mocked."""

from __future__ import annotations

import json
import shlex
import subprocess
import time

import numpy as np
import pytest
from helpers import yt_as

from tests.services.jobs.test_jobs_process import Proc
from tests.services.models.test_endpoints import MLSERVER_PY, ROOT

PROBE = np.array([[0.5, 1.0, 2.0, -1.0], [-2.0, -1.0, 0.0, 0.0], [1, 1, 1, 1]], dtype=np.float32)

TRAIN = r"""
import json, sys, os
import numpy as np
out = sys.argv[1]
probe = np.array(json.loads(sys.argv[2]), dtype="float32")
rng = np.random.default_rng(0)
x = rng.normal(size=(300, 4)).astype("float32")
y = (x[:, 0] + 2 * x[:, 1] > 0).astype("int64")
expected = {}

import xgboost as xgb
os.makedirs(out + "/xgb")
c = xgb.XGBClassifier(n_estimators=8, max_depth=3).fit(x, y)
c.save_model(out + "/xgb/model.json")
expected["xgb"] = {"predict": c.predict(probe).tolist(), "predict_proba": c.predict_proba(probe).tolist()}

import lightgbm as lgb
os.makedirs(out + "/lgbm")
booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 7}, lgb.Dataset(x, y), num_boost_round=8)
booster.save_model(out + "/lgbm/model.txt")
expected["lgbm"] = {"predict": booster.predict(probe).tolist()}

import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).eval()
os.makedirs(out + "/net")
program = torch.export.export(net, (torch.zeros(2, 4),), dynamic_shapes=({0: torch.export.Dim("batch")},))
torch.export.save(program, out + "/net/model.pt2")
with torch.no_grad():
    expected["net"] = {"output": net(torch.from_numpy(probe)).numpy().tolist()}
print(json.dumps(expected))
"""

# appended to the docs' custom model: it says which process imported it
MARKER = """
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "imported-by"), "w") as f:
    f.write(str(os.getpid()))
"""
WEIGHTS = [0.5, -1.0, 2.0, 0.25]

pytestmark = pytest.mark.skipif(
    subprocess.run(
        [MLSERVER_PY, "-c", "import mlserver_xgboost, mlserver_lightgbm, torch, onnxscript"], capture_output=True
    ).returncode
    != 0
    if MLSERVER_PY.exists()
    else True,
    reason="the runtimes in MLServer's environment (make mlserver)",
)


@pytest.fixture
def proc(hub, db_url, tmp_path):
    p = Proc(hub, db_url, tmp_path)
    p.start()
    yield p
    for e in p.call("admin", "GET", "endpoints").json():
        p.call("admin", "DELETE", f"endpoints/{e['name']}")
    p.stop()


def docs_custom() -> tuple[str, list[str]]:
    """docs/models.md's custom-Python model and the commands after it (register, deploy)."""
    text = (ROOT / "docs" / "models.md").read_text()
    section = text.split("**Custom Python** serves anything else", 1)[1]
    source = section.split("```python\n", 1)[1].split("```", 1)[0]
    block = section.split("```\n", 2)[2].split("```", 1)[0]
    return source, [line.split("#")[0].strip() for line in block.splitlines() if line.startswith("yt ")]


def client(proc):
    from yitong_lab.client import Client

    return Client(proc.base.rstrip("/"), proc.hub.tokens["alice"])


def register(proc, model: str, folder, framework: str, fmt: str, signature=None) -> dict:
    from yitong_lab.models.sdk import Models

    with client(proc) as c:
        return Models(c).register(model, folder, framework=framework, format=fmt, signature=signature, progress=None)


def deploy(proc, tmp_path, name: str, model: str) -> dict:
    started = time.monotonic()
    r = proc.call("alice", "POST", "endpoints", json={"name": name, "model": model, "profile": "cpu-small"})
    assert r.status_code == 201, r.text
    while (e := proc.call("alice", "GET", f"endpoints/{name}").json())["state"] != "ready":
        log = tmp_path / f"data/endpoints/{name}/mlserver.log"
        assert time.monotonic() - started < 90, (e, log.read_text()[-3000:] if log.exists() else "")
        time.sleep(0.3)
    return e


def infer(proc, name: str, array, outputs: list[str], input_name: str = "input") -> dict:
    import tritonclient.http as th

    url = f"127.0.0.1:{proc.port}/services/yitong/api/v1/endpoints/{name}"
    c = th.InferenceServerClient(url=url)
    auth = {"Authorization": f"token {proc.hub.tokens['alice']}"}
    x = th.InferInput(input_name, list(array.shape), {"float32": "FP32", "float64": "FP64"}[str(array.dtype)])
    x.set_data_from_numpy(array, binary_data=False)
    wanted = [th.InferRequestedOutput(o, binary_data=False) for o in outputs]
    answer = c.infer(name, [x], outputs=wanted, headers=auth)
    return {o: answer.as_numpy(o) for o in outputs}


def test_xgboost_lightgbm_onnx_and_custom_python_served_and_refusals(proc, tmp_path, monkeypatch, capsys):
    out = subprocess.run(
        [MLSERVER_PY, "-c", TRAIN, str(tmp_path), json.dumps(PROBE.tolist())], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    expected = json.loads(out.stdout.strip().splitlines()[-1])
    sig = {"inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}

    # XGBoost: labels and probabilities as the library's own predict gives them
    register(proc, "vision/xgb", tmp_path / "xgb", "xgboost", "json", sig)
    deploy(proc, tmp_path, "xgb", "vision/xgb@1")
    got = infer(proc, "xgb", PROBE, ["predict", "predict_proba"])
    assert got["predict"].ravel().tolist() == expected["xgb"]["predict"]
    np.testing.assert_allclose(got["predict_proba"], expected["xgb"]["predict_proba"], rtol=1e-5, atol=1e-6)
    assert proc.call("alice", "DELETE", "endpoints/xgb").status_code == 204

    # LightGBM: the booster's probabilities
    register(proc, "vision/lgbm", tmp_path / "lgbm", "lightgbm", "txt", sig)
    deploy(proc, tmp_path, "lgbm", "vision/lgbm@1")
    got = infer(proc, "lgbm", PROBE, ["predict"])
    np.testing.assert_allclose(got["predict"].ravel(), expected["lgbm"]["predict"], rtol=1e-6, atol=1e-9)
    assert proc.call("alice", "DELETE", "endpoints/lgbm").status_code == 204

    # PyTorch -> ONNX (torch.onnx, checked on sample inputs, a new version with lineage), served
    # by the platform's ONNX runtime: the module's own outputs
    from yitong_lab.cli.grammar import run

    register(proc, "vision/net", tmp_path / "net", "pytorch", "pt2")
    yt_as(monkeypatch, proc.base, proc.hub.tokens["alice"])
    assert run(["model", "convert", "vision/net@1", "--python", str(MLSERVER_PY)]) == 0, capsys.readouterr().err
    said = capsys.readouterr().out
    assert said.startswith("registered vision/net v2 (ONNX of vision/net@1): 64 sample rows agree"), said
    v = proc.call("alice", "GET", "models/vision/net/versions/2").json()
    assert (v["framework"], v["format"], v["files"]) == ("onnx", "onnx", 1)
    assert v["lineage"]["converted_from"] == "vision/net@1" and v["lineage"]["check"]["ok"] is True
    assert v["lineage"]["check"]["converter"].startswith("torch.onnx 2.13.0")
    assert v["signature"]["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, 4]}], v["signature"]
    deploy(proc, tmp_path, "net", "vision/net@2")
    (output,) = [o["name"] for o in v["signature"]["outputs"]]
    got = infer(proc, "net", PROBE, [output])
    np.testing.assert_allclose(got[output], expected["net"]["output"], rtol=1e-5, atol=1e-5)
    got = infer(proc, "net", PROBE.astype(np.float64)[:1], [output])  # any batch size; FP64 cast to the graph's
    np.testing.assert_allclose(got[output], expected["net"]["output"][:1], rtol=1e-5, atol=1e-5)
    assert proc.call("alice", "DELETE", "endpoints/net").status_code == 204

    # custom Python: docs/models.md's MLModel subclass and commands, verbatim; imported only by
    # the endpoint's own process
    source, commands = docs_custom()
    assert commands == [
        "yt model register vision/scorer ./scorer --framework python",
        "yt deploy create scorer vision/scorer --profile cpu-small",
    ]
    folder = tmp_path / "scorer"
    folder.mkdir()
    (folder / "model.py").write_text(source + MARKER)
    (folder / "weights.json").write_text(json.dumps(WEIGHTS))
    monkeypatch.chdir(tmp_path)
    for line in commands:
        assert run(shlex.split(line)[1:]) == 0, (line, capsys.readouterr())
    assert proc.call("alice", "GET", "endpoints/scorer").json()["state"] == "ready"
    got = infer(proc, "scorer", PROBE, ["score"])
    np.testing.assert_allclose(got["score"].ravel(), PROBE.astype(np.float64) @ np.array(WEIGHTS), rtol=1e-12)
    (marker,) = (tmp_path / "data/endpoints/scorer").glob("*/model/imported-by")  # the replica's copy
    importer = int(marker.read_text())
    assert importer != proc.proc.pid  # the platform service never imported it
    assert proc.call("alice", "DELETE", "endpoints/scorer").status_code == 204

    # refusals, before any allocation or process: a sentence naming the supported runtimes
    register(proc, "vision/tf", tmp_path / "xgb", "tensorflow", "savedmodel")
    r = proc.call("alice", "POST", "endpoints", json={"name": "tf", "model": "vision/tf", "profile": "cpu-small"})
    assert r.status_code == 422 and r.json()["detail"] == (
        "model vision/tf v1 has framework tensorflow (format savedmodel); endpoints serve sklearn (scikit-learn), "
        "xgboost (XGBoost), lightgbm (LightGBM), onnx (ONNX), python (custom Python)"
    ), r.text
    (folder / "model.py").write_text("from mlserver import MLModel\nclass A(MLModel): pass\nclass B(MLModel): pass\n")
    register(proc, "vision/scorer", folder, "python", "")
    r = proc.call(
        "alice", "POST", "endpoints", json={"name": "two", "model": "vision/scorer@2", "profile": "cpu-small"}
    )
    assert r.status_code == 422 and r.json()["detail"] == (
        "model vision/scorer v2: model.py has 2 classes deriving from mlserver.MLModel (A, B); it needs one"
    ), r.text
    assert [a for a in proc.call("admin", "GET", "allocations").json() if a["kind"] == "endpoint"] == []
