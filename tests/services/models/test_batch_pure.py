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


# Arrow's reading and writing against the pandas path (engine "pandas"), byte for byte, in
# MLServer's environment: a classifier (integer predictions, Arrow writes them), a regressor
# (float predictions, pandas writes them; equal to 12 digits: Arrow parses the decimals
# correctly rounded, pandas' default parser may be an ulp off), kept values that need quoting, integer features in
# the first block and decimals later, a value Arrow does not read as a number ("None": pandas
# reads it as missing; the histogram model takes missing values) from the third chunk on, and
# resuming after two parts were written and a temporary one left behind.
ENGINES = """
import contextlib, csv, io, json, shutil, sys
from pathlib import Path
import joblib, numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from yitong_lab.models import batch_predict

case, root = sys.argv[1], Path(sys.argv[2])
rng = np.random.default_rng(0)
x = rng.normal(size=(300, 4))
models = {
    "classifier": LogisticRegression(max_iter=500).fit(x, (x[:, 0] > 0).astype("int64") + (x[:, 1] > 1)),
    "regressor": LinearRegression().fit(x, x @ [1.0, 2.0, -1.0, 0.5]),
    "missing": HistGradientBoostingClassifier(max_iter=5).fit(np.where(x > 1.5, np.nan, x), (x[:, 0] > 0)),
}
(root / "model").mkdir()
joblib.dump(models["regressor" if case == "regressor" else "missing" if case == "missing" else "classifier"],
            root / "model" / "m.joblib")
rows = 2500
(root / "data").mkdir()
with open(root / "data" / "t.csv", "w") as f:
    f.write("id,a,b,c,d\\n")
    for i in range(rows):
        v = rng.normal(size=4).round(3)
        ident = {"quoted": f'"r{i},{i % 3}"' if i % 700 == 5 else f"r{i}", "ints": str(i)}.get(case, f"r{i}")
        cells = [str(int(v[0] * 10)) if case == "ints" and i < 1500 else str(v[0]), *map(str, v[1:])]
        if case == "missing" and i == 2100:
            cells[1] = "None"
        f.write(",".join([ident, *cells]) + "\\n")

def run(engine, out, chunk_rows=1000):
    plan = {"model": str(root / "model"), "data": str(root / "data"), "out": str(out), "columns": list("abcd"),
            "keep": ["id"], "chunk_rows": chunk_rows, "path": "", "engine": engine, "threads": 2}
    lines, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(lines), contextlib.redirect_stderr(err):
        batch_predict.run(plan)
    return [json.loads(line) for line in lines.getvalue().splitlines()], err.getvalue()

def parts(out):
    return {p.name: p.read_bytes() for p in sorted((out / "t").iterdir())}

def near(x, y):
    try:
        return x == y or abs(float(x) - float(y)) <= 1e-12 * max(1.0, abs(float(x)))
    except ValueError:
        return False

def close(a, b):  # the same rows, floats to 12 digits (Arrow parses decimals correctly rounded, pandas to an ulp)
    rows = lambda d: [row for name in sorted(d) for row in csv.reader(d[name].decode().splitlines())]
    return all(x[0] == y[0] and near(x[1], y[1]) for x, y in zip(rows(a), rows(b), strict=True))

_, _ = run("pandas", root / "pandas")
progress, err = run("arrow", root / "arrow")
(root / "resumed" / "t").mkdir(parents=True)
for name in ("part-000000.csv", "part-000001.csv"):
    shutil.copy(root / "pandas" / "t" / name, root / "resumed" / "t" / name)
(root / "resumed" / "t" / ".part-000002.csv.tmp").write_text("half a part")
resumed, _ = run("arrow", root / "resumed")
want = parts(root / "pandas")
print(json.dumps({
    "parts": len(want), "same": parts(root / "arrow") == want, "resumed_same": parts(root / "resumed") == want,
    "close": close(parts(root / "arrow"), want) and close(parts(root / "resumed"), want),
    "progress": progress[-1], "skipped": resumed[-1]["skipped"], "pandas_took_over": "reading on with pandas" in err,
    "head": want["part-000000.csv"].decode().splitlines()[:2],
}))
"""


@pytest.mark.skipif(not HAS_PYARROW, reason="pyarrow in MLServer's environment (make mlserver)")
@pytest.mark.parametrize(
    "case, same, pandas_took_over",
    [
        ("classifier", True, False),
        ("regressor", False, False),
        ("quoted", True, False),
        ("ints", True, False),
        ("missing", True, True),
    ],
)
def test_arrow_parts_are_the_pandas_parts_byte_for_byte_and_resume(tmp_path, case, same, pandas_took_over):
    env = {"PYTHONPATH": str(Path(batch_predict.__file__).resolve().parents[2])}
    out = subprocess.run([MLSERVER_PY, "-c", ENGINES, case, str(tmp_path)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert (got["parts"], got["same"], got["resumed_same"], got["close"]) == (3, same, same, True), got
    assert got["progress"] == {"chunks": 3, "chunks_done": 3, "skipped": 0, "rows": 2500, "rows_total": 2500}
    assert got["skipped"] == 2
    assert got["pandas_took_over"] is pandas_took_over
    assert got["head"][0] == "id,prediction"


# in the MLServer interpreter: a model of each framework, batch_predict over a CSV, its parts
# against the framework's own predict on the same rows
FRAMEWORKS = r"""
import json, sys
from pathlib import Path
import numpy as np, pandas as pd
from yitong_lab.models import batch_predict
kind, root = sys.argv[1], Path(sys.argv[2])
rng = np.random.default_rng(0)
x = rng.normal(size=(700, 3)).round(4)
y = (x[:, 0] + x[:, 1] > 0).astype(int)
model, data, out = root / "model", root / "data", root / "out"
for d in (model, data, out):
    d.mkdir()
frame = pd.DataFrame(x, columns=["a", "b", "c"]); frame.insert(0, "id", np.arange(len(x)))
frame.to_csv(data / "rows.csv", index=False)
if kind == "xgboost-regressor":
    import xgboost as xgb
    m = xgb.XGBRegressor(n_estimators=5).fit(x, x[:, 0] * 2); m.save_model(model / "model.json"); expect = m.predict(x)
elif kind == "xgboost-classifier":
    import xgboost as xgb
    m = xgb.XGBClassifier(n_estimators=5).fit(x, y); m.save_model(model / "model.json"); expect = m.predict(x)
elif kind == "lightgbm":
    import lightgbm as lgb
    m = lgb.train({"objective": "binary", "verbose": -1}, lgb.Dataset(x, y), 5); m.save_model(str(model / "model.txt")); expect = m.predict(x)
elif kind == "onnx":
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression
    m = LogisticRegression().fit(x, y)
    (model / "model.onnx").write_bytes(to_onnx(m, x[:1].astype("float32")).SerializeToString()); expect = m.predict(x)
file = {"xgboost-regressor": "model.json", "xgboost-classifier": "model.json", "lightgbm": "model.txt", "onnx": "model.onnx"}[kind]
framework = kind.split("-")[0]
plan = {"model": str(model), "data": str(data), "out": str(out), "columns": ["a", "b", "c"], "keep": ["id"],
        "chunk_rows": 300, "path": "", "threads": 1, "framework": framework, "model_file": file}
batch_predict.run(plan)
got = pd.concat([pd.read_csv(p) for p in sorted(out.rglob("part-*.csv"))])
print(json.dumps({"rows": len(got), "ids": got["id"].tolist() == list(range(700)),
                  "close": bool(np.allclose(got["prediction"].to_numpy(), np.asarray(expect).reshape(-1), atol=1e-5))}))
"""


@pytest.mark.skipif(not HAS_PYARROW, reason="needs the MLServer environment (make mlserver)")
@pytest.mark.parametrize("kind", ["xgboost-regressor", "xgboost-classifier", "lightgbm", "onnx"])
def test_batch_predicts_with_each_frameworks_own_model(tmp_path, kind):
    """XGBoost (a regressor, a classifier's labels), LightGBM and ONNX versions are predicted as
    their endpoints' runtimes load them, the same values as the framework's own ``predict``."""
    env = {"PYTHONPATH": str(Path(batch_predict.__file__).resolve().parents[2])}
    out = subprocess.run([MLSERVER_PY, "-c", FRAMEWORKS, kind, str(tmp_path)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.splitlines()[-1]) == {"rows": 700, "ids": True, "close": True}
