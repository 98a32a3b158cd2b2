"""Pure parts of the model capability: lineage from a ledger record, the metric comparison,
infer requests against a signature, MLServer's settings, the runtime a version gets and the
file it loads, a custom runtime's class found in its text (never imported)."""

from __future__ import annotations

from pathlib import Path

import pytest

from yitong_services.models import lineage, mlserver, runtimes, v2check
from yitong_services.models.views import compare

RECORD = {
    "run": 7,
    "attempt": 1,
    "code": {"commit": "abc123", "dirty_hash": None, "path": None},
    "inputs": [{"dataset": "vision/iris@1", "mount": "iris", "version": 1, "manifest": "ab" * 32}],
    "environment": {"image": None, "digest": None, "python_version": "3.13", "pip_freeze_sha256": "f" * 64},
    "parameters": {"command": ["python"]},
    "metrics": {"acc": 0.9, "loss": float("nan"), "note": "x", "flag": True, "n": 3},
}


def test_lineage_from_a_record():
    out = lineage.from_record(12, RECORD, "out/model")
    assert (out["job"], out["run"], out["path"], out["code"]["commit"]) == (12, 7, "out/model", "abc123")
    assert out["datasets"] == [{"dataset": "vision/iris@1", "version": 1, "manifest": "ab" * 32}]
    assert lineage.metrics_of(RECORD) == {"acc": 0.9, "n": 3.0}  # no NaN, strings or booleans


def test_compare_fills_gaps():
    rows = [{"number": 1, "aliases": [], "metrics": {"a": 1}}, {"number": 2, "aliases": ["p"], "metrics": {"b": 2}}]
    assert compare("v/m", rows)["versions"][0]["metrics"] == {"a": 1, "b": None}


def test_signature_check():
    sig = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]}
    ok = {"inputs": [{"name": "x", "shape": [3, 4], "datatype": "FP32", "data": [0] * 12}]}
    assert v2check.refusal(ok, sig) is None
    assert v2check.refusal(ok, {}) is None
    bad = {"inputs": [{"name": "x", "shape": [3, 5], "datatype": "FP32", "data": []}]}
    assert v2check.refusal(bad, sig) == "input 'x' has shape [3, 5]; the model takes [-1, 4] (-1: any size)"
    assert (
        v2check.refusal({"inputs": [{"name": "x", "shape": "3"}]}, sig) == "input 'x': shape must be a list of integers"
    )
    assert v2check.refusal([], sig) == "the request has no inputs list"


@pytest.mark.parametrize(
    "framework,format,implementation",
    [
        ("SKLearn", "", "mlserver_sklearn.SKLearnModel"),
        ("scikit-learn", "joblib", "mlserver_sklearn.SKLearnModel"),
        ("xgboost", "json", "mlserver_xgboost.XGBoostModel"),
        ("LightGBM", "txt", "mlserver_lightgbm.LightGBMModel"),
        ("onnx", "onnx", "yitong_lab.models.runtimes.OnnxModel"),
        ("pytorch", "onnx", "yitong_lab.models.runtimes.OnnxModel"),  # the format picks when the framework does not
        ("custom", "", ""),
        (" python ", "", ""),
        ("tensorflow", "savedmodel", None),
        ("", "", None),
    ],
)
def test_the_runtime_of_a_version(framework, format, implementation):
    r = runtimes.choose(framework, format)
    assert (r.implementation if r else None) == implementation


@pytest.mark.parametrize(
    "framework,paths,expected",
    [
        ("sklearn", ["conf.json", "model.joblib"], "model.joblib"),
        ("sklearn", ["a", "b"], None),
        ("sklearn", ["weights"], "weights"),  # an only file
        ("xgboost", ["signature.json", "model.json"], "model.json"),
        ("xgboost", ["signature.json", "booster.json"], None),  # two candidates, none named model
        ("xgboost", ["b/booster.ubj", "README"], "b/booster.ubj"),
        ("lightgbm", ["model.txt", "notes.txt"], "model.txt"),
        ("onnx", ["net.onnx", "labels.txt"], "net.onnx"),
        ("python", ["model.py", "helpers.py"], "model.py"),
        ("python", ["scorer.py", "w.json"], "scorer.py"),
        ("python", ["pkg/model.py"], None),  # top-level files only
        ("python", ["run"], None),  # never an only non-Python file
    ],
)
def test_the_file_a_runtime_loads(framework, paths, expected):
    runtime = runtimes.choose(framework)
    assert runtime is not None and runtimes.model_file(runtime, paths) == expected


def test_supported_sentence_and_module_names():
    assert runtimes.supported() == (
        "sklearn (scikit-learn), xgboost (XGBoost), lightgbm (LightGBM), onnx (ONNX), python (custom Python)"
    )
    assert [runtimes.module_name(p) for p in ("model.py", "my-model.py", "class.py", "x1.py")] == [
        "model",
        None,
        None,
        "x1",
    ]


@pytest.mark.parametrize(
    "source,expected",
    [
        (b"from mlserver import MLModel\nclass A(MLModel):\n    pass\n", ["A"]),
        (b"import mlserver\nclass A(mlserver.MLModel): pass\nclass B: pass\n", ["A"]),
        (b"class A(Base, MLModel): pass\nclass C(MLModel): pass\ndef f():\n    class D(MLModel): pass\n", ["A", "C"]),
        (b"import os\nos.system('touch /tmp/pwned')\n", []),  # parsed, never run
        (b"class (:\n", "is not valid Python (invalid syntax, line 1)"),
        (b"x" * (runtimes.MAX_SOURCE + 1), "is larger than 1024 KiB"),
    ],
)
def test_mlmodel_classes_from_the_text(source, expected):
    assert runtimes.mlmodel_classes(source) == expected


def test_mlserver_files(tmp_path):
    env = mlserver.environment(tmp_path, custom=True)
    assert env["PYTHONPATH"].split(":") == [mlserver.extensions_dir(), str(tmp_path / "model")]
    assert (Path(mlserver.extensions_dir()) / "yitong_lab" / "models" / "runtimes.py").is_file()
    assert set(env) == {"PATH", "HOME", "LANG", "PYTHONUNBUFFERED", "PYTHONPATH"}  # nothing of the service's
    assert mlserver.environment(tmp_path, custom=False)["PYTHONPATH"] == mlserver.extensions_dir()
    s = mlserver.settings()
    assert (s["host"], s["http_port"], s["grpc_port"], s["metrics_port"]) == ("127.0.0.1", 0, 0, 0)
    assert s["metrics_endpoint"] is None
    # the replica's program, in MLServer's environment, on the socket in its folder (never `mlserver start`)
    argv = mlserver.command(tmp_path)
    assert argv == [mlserver.framework_python(), "-P", str(mlserver.SERVER), str(tmp_path), mlserver.SOCKET]
    assert mlserver.SERVER.is_file() and "/" not in mlserver.SOCKET
