"""Pure parts of the model capability: lineage from a ledger record, the metric comparison,
infer requests against a signature, MLServer's settings."""

from __future__ import annotations

from yitong_services.models import lineage, mlserver, v2check
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


def test_mlserver_files():
    assert mlserver.runtime_for("SKLearn") == "mlserver_sklearn.SKLearnModel" and mlserver.runtime_for("") is None
    assert mlserver.model_file(["conf.json", "model.joblib"]) == "model.joblib"
    assert mlserver.model_file(["a", "b"]) is None
    s = mlserver.settings(9000)
    assert (s["host"], s["http_port"], s["grpc_port"], s["metrics_port"]) == ("127.0.0.1", 9000, 0, 0)
