"""The Models view's pure builders run by node on the compiled modules (extensions/lib, built by
`make install`): the lineage graph of a version (lineageGraph.ts) from the registry's lineage
field, its SVG with users' names escaped, and the try-it form's V2 requests and answer lines
(inferRequest.ts). No browser: the browser side is tests/e2e/test_models_browser.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import require

LIB = Path(__file__).resolve().parents[2] / "extensions" / "lib"
SVG = "{http://www.w3.org/2000/svg}"

# what the registry stores for a version registered from job 12 (models/lineage.py from_record)
JOB_LINEAGE = {
    "job": 12,
    "run": 30,
    "attempt": 1,
    "path": "out/model",
    "code": {"commit": "0123456789abcdef0123", "dirty_hash": "d1rty", "path": "/home/alice/proj"},
    "datasets": [
        {"dataset": "vision/iris@3", "version": 3, "manifest": "b3:aaa"},
        {"dataset": "vision/extra", "version": 1, "manifest": "b3:bbb"},  # named without a version
    ],
    "environment": {"image": None, "digest": None, "python_version": "3.11.2", "pip_freeze_sha256": "x"},
    "parameters": {"lr": 0.1},
    "metrics": {"accuracy": 0.9},
}


def run(module: str, expression: str):
    """`expression` evaluated by node with `module`'s exports in scope as `m`; its JSON value."""
    path = LIB / f"{module}.js"
    require("node", shutil.which("node") is not None, "apt-get install nodejs")
    require("the compiled extension", path.exists(), "make install")
    script = f"import * as m from {json.dumps(path.as_uri())};\nprocess.stdout.write(JSON.stringify({expression}));\n"
    out = subprocess.run(
        ["node", "--no-warnings", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout)


def graph(lineage: dict, model: str = "vision/iris-clf", version: int = 2) -> dict:
    return run("lineageGraph", f"m.lineageGraph({json.dumps(model)}, {version}, {json.dumps(lineage)})")


def test_a_job_version_links_datasets_and_code_to_the_job_and_the_job_to_the_version():
    g = graph(JOB_LINEAGE)
    nodes = {n["id"]: n for n in g["nodes"]}
    assert {n: (v["kind"], v["column"], v["label"]) for n, v in nodes.items()} == {
        "dataset-0": ("dataset", 0, "vision/iris@3"),
        "dataset-1": ("dataset", 0, "vision/extra@1"),
        "code": ("code", 0, "code 0123456789 +changes"),
        "job": ("job", 1, "job 12 · run 30"),
        "model": ("model", 2, "vision/iris-clf v2"),
    }
    assert sorted((e["from"], e["to"]) for e in g["edges"]) == [
        ("code", "job"),
        ("dataset-0", "job"),
        ("dataset-1", "job"),
        ("job", "model"),
    ]
    assert nodes["job"]["detail"] == "job 12, run 30, attempt 1, outputs path out/model"
    assert nodes["dataset-0"]["detail"] == "dataset vision/iris@3, manifest b3:aaa"
    assert nodes["code"]["detail"] == (
        "code commit 0123456789abcdef0123, uncommitted changes d1rty, in /home/alice/proj"
    )
    # three columns left to right, the one-node columns centred on the three-node one
    assert nodes["dataset-0"]["x"] < nodes["job"]["x"] < nodes["model"]["x"]
    assert nodes["job"]["y"] == nodes["model"]["y"] == nodes["dataset-1"]["y"]
    assert g["width"] == 6 * 2 + 3 * 190 + 2 * 56 and g["height"] == 6 * 2 + 3 * 34 + 2 * 10


@pytest.mark.parametrize(
    ("lineage", "nodes", "edges"),
    [
        ({}, [("model", "model")], []),
        ({"registered_from": "notebook"}, [("note", "from a notebook"), ("model", "model")], [("note", "model")]),
        (
            {"converted_from": "vision/iris@1", "check": {"rows": 64}},
            [("source", "from vision/iris@1"), ("model", "model")],
            [("source", "model")],
        ),
        # a job without datasets or code (e.g. a job that read nothing from the store)
        (
            {"job": 7, "run": None, "code": {}, "datasets": []},
            [("job", "job 7"), ("model", "model")],
            [("job", "model")],
        ),
    ],
)
def test_versions_without_a_full_job_lineage(lineage, nodes, edges):
    g = graph(lineage)
    got = [(n["id"], n["label"] if n["id"] != "model" else "model") for n in g["nodes"]]
    assert got == nodes
    assert [(e["from"], e["to"]) for e in g["edges"]] == edges
    assert all(n["column"] == i for i, n in enumerate(g["nodes"]))


def test_many_datasets_are_counted_in_one_node_and_long_labels_cut():
    lineage = {"job": 1, "datasets": [{"dataset": f"vc/d{i}", "version": i} for i in range(11)]}
    g = graph(lineage, model="vc/" + "m" * 26, version=123)
    ids = [n["id"] for n in g["nodes"] if n["kind"] == "dataset"]
    assert ids == [f"dataset-{i}" for i in range(8)] + ["dataset-more"]
    more = next(n for n in g["nodes"] if n["id"] == "dataset-more")
    assert more["label"] == "3 more datasets" and more["detail"] == "vc/d8, vc/d9, vc/d10"
    model = next(n for n in g["nodes"] if n["id"] == "model")
    assert len(model["label"]) == 28 and model["label"].endswith("…")
    assert model["detail"] == f"model vc/{'m' * 26} version 123"


def test_the_svg_escapes_users_values_and_parses_as_svg():
    hostile = "<script>alert(1)</script>&\"'"
    lineage = {"job": 3, "path": hostile, "datasets": [{"dataset": hostile, "version": 1}]}
    svg = run(
        "lineageGraph",
        f"m.graphSVG(m.lineageGraph({json.dumps('vc/' + hostile)}, 1, {json.dumps(lineage)}))",
    )
    assert "<script" not in svg and "&lt;script&gt;" in svg
    root = ET.fromstring(svg)  # well-formed XML: every value escaped
    assert root.tag == f"{SVG}svg"
    groups = root.findall(f"{SVG}g")
    assert [g.get("data-node") for g in groups] == ["dataset-0", "job", "model"]
    assert groups[0].find(f"{SVG}title").text == f"dataset {hostile}@1"
    assert groups[1].find(f"{SVG}title").text == f"job 3, outputs path {hostile}"
    edges = root.findall(f"{SVG}path")
    assert [(e.get("data-from"), e.get("data-to")) for e in edges] == [("job", "model"), ("dataset-0", "job")]
    assert all(e.get("marker-end") == "url(#yt-lineage-arrow)" for e in edges)


SIG = {"inputs": [{"name": "predict", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}


def test_an_example_request_follows_the_signature():
    text = run("inferRequest", f"m.exampleRequest({json.dumps(SIG)})")
    assert json.loads(text) == {"inputs": [{"name": "predict", "datatype": "FP32", "shape": [1, 4], "data": [0] * 4}]}
    two = {
        "inputs": [
            {"name": "flags", "datatype": "BOOL", "shape": [2]},
            {"name": "text", "datatype": "BYTES", "shape": [-1]},
            {"name": "image", "datatype": "UINT8", "shape": [-1, 28, 28]},
        ]
    }
    got = json.loads(run("inferRequest", f"m.exampleRequest({json.dumps(two)})"))["inputs"]
    assert [(t["name"], t["shape"], t["data"][:1], len(t["data"])) for t in got] == [
        ("flags", [2], [False], 2),
        ("text", [1], [""], 1),
        ("image", [1, 28, 28], [0], 64),  # at most 64 example values
    ]
    assert json.loads(run("inferRequest", "m.exampleRequest({})"))["inputs"][0]["name"] == "input-0"


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        # rows of the one input: its name and datatype, the rows' shape, the data flat
        ("[[5.1, 3.5, 1.4, 0.2], [1, 2, 3, 4]]", {"name": "predict", "datatype": "FP32", "shape": [2, 4]}),
        ("[1, 2, 3, 4]", {"name": "predict", "datatype": "FP32", "shape": [4]}),
    ],
)
def test_rows_become_the_one_input(typed, expected):
    request = run("inferRequest", f"m.parseInferRequest({json.dumps(typed)}, {json.dumps(SIG)})")
    (tensor,) = request["inputs"]
    assert {k: tensor[k] for k in expected} == expected
    assert tensor["data"] == [v for row in json.loads(typed) for v in (row if isinstance(row, list) else [row])]


def test_a_full_request_passes_as_typed():
    doc = {"inputs": [{"name": "a", "datatype": "INT64", "shape": [1], "data": [1]}], "id": "x"}
    assert run("inferRequest", f"m.parseInferRequest({json.dumps(json.dumps(doc))}, {{}})") == doc


@pytest.mark.parametrize(
    ("typed", "signature", "sentence"),
    [
        ("{nope", SIG, "the request is not JSON: "),
        ("[[1, 2], [3]]", SIG, "the rows are not all of one length"),
        ("[[1, 2]]", {}, "rows alone are for a model with one input in its signature"),
        ('{"inputs": []}', SIG, 'a V2 infer request is {"inputs": [{"name", "datatype", "shape", "data"}, ...]}'),
        ("42", SIG, "a V2 infer request is"),
        ('{"inputs": [{"name": "a"}]}', SIG, "inputs[0] needs a name and a datatype"),
    ],
)
def test_what_is_not_a_request_is_named(typed, signature, sentence):
    got = run("inferRequest", f"m.parseInferRequest({json.dumps(typed)}, {json.dumps(signature)}).message")
    assert got.startswith(sentence), got


def test_the_answer_as_lines():
    answer = {
        "model_name": "iris",
        "outputs": [
            {"name": "predict", "datatype": "INT64", "shape": [3, 1], "data": [1, 0, 2]},
            {"name": "label", "datatype": "BYTES", "shape": [1], "data": ["setosa"]},
            {"name": "big", "datatype": "FP32", "shape": [25], "data": list(range(25))},
        ],
    }
    lines = run("inferRequest", f"m.responseLines({json.dumps(answer)})")
    assert lines[:2] == ["predict INT64 [3, 1]: 1, 0, 2", "label BYTES [1]: setosa"]
    assert lines[2] == "big FP32 [25]: " + ", ".join(str(i) for i in range(20)) + ", … (25 values)"
    assert run("inferRequest", "m.responseLines({error: 'x'})") == ["(the server answered without outputs)"]


def replica(version: int, job: int, state: str = "running", routed: bool = True, draining: bool = False) -> dict:
    return {"version": version, "job": job, "job_state": state, "routed": routed, "draining": draining}


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ({"scale": 1, "replicas": [replica(1, 1)]}, "1 of 1 replica ready"),
        ({"scale": 2, "replicas": [replica(1, 1), replica(1, 2, "running", routed=False)]}, "1 of 2 replicas ready"),
        (  # scaled past the quota: one waits in the queue
            {"scale": 3, "replicas": [replica(1, 1), replica(1, 2), replica(1, 3, "queued", routed=False)]},
            "2 of 3 replicas ready · 1 queued",
        ),
        (  # a canary on two replicas beside v1's two
            {"scale": 2, "replicas": [replica(1, 1), replica(1, 2), replica(2, 3), replica(2, 4)]},
            "4 of 4 replicas ready",
        ),
        ({"scale": 1, "replicas": [replica(1, 1, routed=False, draining=True), replica(2, 2)]}, "1 of 1 replica ready"),
        ({"replicas": [replica(1, 1)]}, "1 of 1 replica ready"),  # an answer without scale (Kubernetes)
    ],
)
def test_replica_summary(endpoint, expected):
    assert run("endpointText", f"m.replicaSummary({json.dumps(endpoint)})") == expected


def test_key_line_never_holds_more_than_the_prefix():
    key = {
        "id": 1,
        "endpoint": "iris",
        "prefix": "yte_ab12cd34",
        "note": "partner <A>",
        "created_by": "admin",
        "created": "2026-11-26T04:40:00Z",
        "revoked": None,
    }
    assert run("endpointText", f"m.keyLine({json.dumps(key)})") == (
        "yte_ab12cd34... · partner <A> · admin · 2026-11-26 04:40 · in use"
    )
    revoked = key | {"note": "", "revoked": "2026-11-26T05:00:00Z"}
    assert (
        run("endpointText", f"m.keyLine({json.dumps(revoked)})")
        == "yte_ab12cd34... · admin · 2026-11-26 04:40 · revoked"
    )
