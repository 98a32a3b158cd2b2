"""Batch inference's pure builders (models/batch.py) against literals, and the runner's
file-level helpers (yitong_lab.models.batch_predict: row counts, file choice, part names)."""

from __future__ import annotations

import json

import pytest

from yitong_lab.models import batch_predict
from yitong_services.jobs.spec import spec_from_dict
from yitong_services.models import batch

H = "ab" * 32


@pytest.mark.parametrize(
    "path,expected",
    [
        ("", ["a.csv", "d/b.csv", "d/e/c.csv", "dd.csv"]),
        ("d", ["d/b.csv", "d/e/c.csv"]),
        ("d/", ["d/b.csv", "d/e/c.csv"]),
        ("a.csv", ["a.csv"]),
        ("dd", []),
        ("notes.txt", []),
    ],
)
def test_input_files(path, expected):
    files = [{"path": p, "size": 1, "hash": H} for p in ("notes.txt", "d/e/c.csv", "a.csv", "d/b.csv", "dd.csv")]
    assert [f["path"] for f in batch.input_files(files, path)] == expected


@pytest.mark.parametrize(
    "first,expected",
    [
        (b"id,a,b\n1,2,3\n", ["id", "a", "b"]),
        (b'\xef\xbb\xbfid, a ,"b,c"\r\n1', ["id", "a", "b,c"]),
        (b"only,header", ["only", "header"]),
        (b"", []),
        (b"x" * batch.HEADER_BYTES, None),
        (b"\xff\xfe,\n", None),
    ],
)
def test_parse_header(first, expected):
    assert batch.parse_header(first) == expected


HEADER = ["id", "a", "b", "c", "d"]


@pytest.mark.parametrize(
    "columns,keep,width,chosen,sentence",
    [
        ([], ["id"], 4, ["a", "b", "c", "d"], None),
        (["d", "c", "b", "a"], ["id"], 4, ["d", "c", "b", "a"], None),
        ([], [], None, HEADER, None),
        ([], [], 4, None, "the model takes 4 features; 5 columns were chosen (id, a, b, c, d)"),
        (["a", "zz"], [], None, None, "f.csv has no column zz (it has id, a, b, c, d)"),
        ([], ["nope"], None, None, "f.csv has no column nope (it has id, a, b, c, d)"),
        (["a", "a"], [], None, None, "columns: a column is named twice"),
        ([], HEADER, None, None, "f.csv: no feature columns are left beside keep"),
        ([], ["prediction"], None, None, "keep: prediction is the name of the predictions' column; rename that column"),
    ],
)
def test_columns_refusal(columns, keep, width, chosen, sentence):
    assert batch.columns_refusal("f.csv", HEADER, columns, keep, width) == (chosen, sentence)


def test_a_header_naming_a_column_twice_is_refused():
    assert batch.columns_refusal("f.csv", ["a", "a"], [], [], None) == (None, "f.csv: the header names a column twice")


@pytest.mark.parametrize(
    "signature,width",
    [
        ({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]}, 4),
        ({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, -1]}]}, None),
        ({"inputs": [{"name": "x", "datatype": "FP32", "shape": [4]}]}, None),
        ({"inputs": [{"shape": [-1, 2]}, {"shape": [-1, 2]}]}, None),
        ({}, None),
    ],
)
def test_signature_width(signature, width):
    assert batch.signature_width(signature) == width


def test_the_job_spec_is_an_argv_with_the_plan_as_one_json_argument():
    plan = batch.plan("/env/bin/python", ["a; rm -rf /", "b"], ["id"], 500, "/d/")
    spec = batch.batch_spec(
        name=batch.job_name("a-model-name-that-is-rather-long"),
        vc="vision",
        model_dataset="vision/model-iris@3",
        input_dataset="vision/flowers@2",
        the_plan=plan,
        cpu=2.0,
        memory=2**30,
        retries=1,
    )
    assert spec == {
        "name": "batch-a-model-name-that-is-rathe",
        "vc": "vision",
        "environment": {"kernel": "python3"},
        "command": [
            "python",
            "-m",
            "yitong_lab.models.batch",
            '{"python":"/env/bin/python","columns":["a; rm -rf /","b"],"keep":["id"],"chunk_rows":500,"path":"d"}',
        ],
        "inputs": [
            {"dataset": "vision/model-iris@3", "mount": "model"},
            {"dataset": "vision/flowers@2", "mount": "data"},
        ],
        "cpu": 2.0,
        "memory": 2**30,
        "retries": 1,
    }
    assert json.loads(spec["command"][3])["columns"][0] == "a; rm -rf /"
    assert spec_from_dict(spec).shell is False  # never shell text: a column name stays a value


def test_lineage_and_progress():
    source = {"dataset": "vision/flowers", "version": 2, "manifest": H, "path": "", "extra": 1}
    assert batch.lineage(7, "vision/iris@3", H, source) == {
        "kind": "batch-inference",
        "job": 7,
        "model": "vision/iris@3",
        "model_manifest": H,
        "inputs": [{"dataset": "vision/flowers", "version": 2, "manifest": H, "path": ""}],
    }
    assert batch.progress({"loss": 1, "batch_rows": 10, "batch_chunks": 2}) == {"rows": 10, "chunks": 2}


@pytest.mark.parametrize(
    "body,rows", [(b"h\n", 0), (b"h\n1\n2\n", 2), (b"h\n1\n2", 2), (b"", 0), (b"h", 0), (b"h\r\n1\r\n", 1)]
)
def test_count_rows(tmp_path, body, rows):
    (tmp_path / "f.csv").write_bytes(body)
    assert batch_predict.count_rows(tmp_path / "f.csv") == rows


def test_csv_files_and_part_names(tmp_path):
    for p in ("b.csv", "a/z.csv", "a/y.txt", "c/d.csv"):
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text("h\n")
    assert [rel for _, rel in batch_predict.csv_files(tmp_path, "")] == ["a/z.csv", "b.csv", "c/d.csv"]
    assert [rel for _, rel in batch_predict.csv_files(tmp_path, "a")] == ["a/z.csv"]
    assert [rel for _, rel in batch_predict.csv_files(tmp_path, "b.csv")] == ["b.csv"]
    assert batch_predict.out_dir(tmp_path / "o", "a/z.csv") / batch_predict.PART.format(3) == (
        tmp_path / "o" / "a" / "z" / "part-000003.csv"
    )
