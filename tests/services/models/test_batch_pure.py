"""Batch inference's pure builders (models/batch.py) against literals, the Parquet footer
reader (models/parquet_footer.py) against files pyarrow writes, and the runner's file-level
helpers (yitong_lab.models.batch_predict: row counts, file choice, part names, Parquet chunks
in MLServer's environment, where pyarrow is)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from yitong_lab.models import batch_predict
from yitong_services.jobs.spec import spec_from_dict
from yitong_services.models import batch, parquet_footer

MLSERVER_PY = Path(__file__).resolve().parents[3] / ".venv-mlserver" / "bin" / "python"
HAS_PYARROW = MLSERVER_PY.exists() and subprocess.run([MLSERVER_PY, "-c", "import pyarrow"]).returncode == 0

H = "ab" * 32


@pytest.mark.parametrize(
    "path,expected",
    [
        ("", ["a.csv", "d/b.csv", "d/e/c.csv", "d/f.parquet", "dd.csv"]),
        ("d", ["d/b.csv", "d/e/c.csv", "d/f.parquet"]),
        ("d/", ["d/b.csv", "d/e/c.csv", "d/f.parquet"]),
        ("a.csv", ["a.csv"]),
        ("dd", []),
        ("notes.txt", []),
    ],
)
def test_input_files(path, expected):
    files = [
        {"path": p, "size": 1, "hash": H}
        for p in ("notes.txt", "d/e/c.csv", "a.csv", "d/b.csv", "dd.csv", "d/f.parquet", "x.parq")
    ]
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


@pytest.mark.parametrize("cpu, threads", [(0.25, 1), (1.0, 1), (1.9, 1), (2.0, 2), (8.0, 8)])
def test_the_prediction_parses_with_the_whole_cpus_the_job_holds(cpu, threads):
    assert batch.threads(cpu) == threads


def test_the_job_spec_is_an_argv_with_the_plan_as_one_json_argument():
    plan = batch.plan("/env/bin/python", ["a; rm -rf /", "b"], ["id"], 500, "/d/", cpu=2.0)
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
            '{"python":"/env/bin/python","columns":["a; rm -rf /","b"],"keep":["id"],"chunk_rows":500,"path":"d",'
            '"threads":2}',
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


def test_input_files_and_part_names(tmp_path):
    for p in ("b.csv", "a/z.csv", "a/y.txt", "c/d.csv", "c/e.parquet"):
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text("h\n")
    assert [rel for _, rel in batch_predict.input_files(tmp_path, "")] == ["a/z.csv", "b.csv", "c/d.csv", "c/e.parquet"]
    assert [rel for _, rel in batch_predict.input_files(tmp_path, "a")] == ["a/z.csv"]
    assert [rel for _, rel in batch_predict.input_files(tmp_path, "b.csv")] == ["b.csv"]
    assert batch_predict.out_dir(tmp_path / "o", "a/z.csv") / batch_predict.PART.format(3) == (
        tmp_path / "o" / "a" / "z" / "part-000003.csv"
    )
    assert batch_predict.out_dir(tmp_path / "o", "c/e.parquet") / batch_predict.PART_PARQUET.format(0) == (
        tmp_path / "o" / "c" / "e" / "part-000000.parquet"
    )


WRITE_PARQUET = """
import sys, numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
out = sys.argv[1]
pq.write_table(pa.table({"id": ["a", "b"], "a": [1.0, 2.0], "b": [1, 2]}), out + "/flat.parquet")
nested = {"s": pa.array([{"x": 1, "y": [1, 2]}]), "l": pa.array([[1, 2]]), "z": [True],
          "m": pa.array([[("k", 1)]], type=pa.map_(pa.string(), pa.int64()))}
pq.write_table(pa.table(nested), out + "/nested.parquet")
pq.write_table(pa.table({f"c{i}": np.arange(3) for i in range(40)}), out + "/wide.parquet", row_group_size=1,
               compression="zstd")
frame = pd.DataFrame({"id": ["r1", "r2"], "a": [0.1, 0.2]}, index=[5, 6])
pq.write_table(pa.Table.from_pandas(frame), out + "/pandas.parquet")
"""


@pytest.mark.skipif(not HAS_PYARROW, reason="pyarrow in MLServer's environment (make mlserver)")
def test_parquet_columns_from_the_footer_as_pyarrow_writes_them(tmp_path):
    subprocess.run([MLSERVER_PY, "-c", WRITE_PARQUET, str(tmp_path)], check=True)

    def names(name: str) -> list[str]:
        data = (tmp_path / name).read_bytes()
        n = parquet_footer.footer_length(data[-parquet_footer.TAIL :])
        assert n is not None
        return batch.parquet_header(parquet_footer.columns(data[-parquet_footer.TAIL - n : -parquet_footer.TAIL]))

    assert names("flat.parquet") == ["id", "a", "b"]
    assert names("nested.parquet") == ["s", "l", "z", "m"]  # a nested column is one name
    assert names("wide.parquet") == [f"c{i}" for i in range(40)]  # field ids past 15, zstd, 3 row groups
    assert names("pandas.parquet") == ["id", "a"]  # without the index pandas wrote
    assert parquet_footer.footer_length(b"1234PAR2") is None
    with pytest.raises(parquet_footer.Malformed):
        parquet_footer.columns(b"\x19\x3c\x15")  # a schema list cut short


CHUNKS = """
import sys, json, pyarrow as pa, pyarrow.parquet as pq
from pathlib import Path
from yitong_lab.models.batch_predict import parquet_frames, count_rows
path = Path(sys.argv[1]) / "t.parquet"
pq.write_table(pa.table({"i": list(range(2500)), "x": [0.5] * 2500}), path, row_group_size=700)
print(json.dumps({"rows": count_rows(path), "chunks": [[int(f["i"].iloc[0]), len(f)] for f in parquet_frames(path, ["i"], 1000, 0)],
                  "resumed": [[int(f["i"].iloc[0]), len(f)] for f in parquet_frames(path, ["i", "i"], 1000, 2)]}))
"""


@pytest.mark.skipif(not HAS_PYARROW, reason="pyarrow in MLServer's environment (make mlserver)")
def test_parquet_chunks_are_chunk_rows_long_across_row_groups_and_resume(tmp_path):
    env = {"PYTHONPATH": str(Path(batch_predict.__file__).resolve().parents[2])}
    out = subprocess.run([MLSERVER_PY, "-c", CHUNKS, str(tmp_path)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "rows": 2500,
        "chunks": [[0, 1000], [1000, 1000], [2000, 500]],
        "resumed": [[2000, 500]],  # the first two chunks' rows dropped
    }
