"""Batch inference end to end on the local backend, with real parts: the platform service as a
process with a real hub, a scikit-learn model trained and saved in MLServer's environment (the
framework interpreter the job predicts in, ``make mlserver``), a CSV dataset uploaded with the
SDK, the job run by the local backend as a process tree, its predictions committed with its own
token. Checked: predictions equal a direct ``predict`` over the same rows, the output version's
lineage (job, model version, input version), progress in the run's metrics, resume after a
``kill -9`` of the predicting process, the refusals (unknown version, another VC, bad columns),
and docs/models.md's "Batch inference" commands run verbatim."""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.services.jobs.test_jobs_process import Proc

ROOT = Path(__file__).resolve().parents[3]
MLSERVER_PY = ROOT / ".venv-mlserver" / "bin" / "python"
TRAIN = """
import sys, joblib, numpy as np
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(0)
x = rng.normal(size=(300, 4))
y = (x[:, 0] + 2 * x[:, 1] > 0).astype("int64") + (x[:, 2] > 1)
joblib.dump(LogisticRegression(max_iter=500).fit(x, y), sys.argv[1] + "/model.joblib")
"""
# the peer: a direct predict over the same CSV rows, in the same environment
DIRECT = """
import sys, joblib, pandas as pd
model = joblib.load(sys.argv[1])
frame = pd.read_csv(sys.argv[2])
print(",".join(str(int(v)) for v in model.predict(frame[["a", "b", "c", "d"]].to_numpy())))
"""
FEATURES = ["a", "b", "c", "d"]

pytestmark = pytest.mark.skipif(not MLSERVER_PY.exists(), reason="run `make mlserver` (MLServer's own environment)")


@pytest.fixture
def proc(hub, db_url, tmp_path):
    p = Proc(hub, db_url, tmp_path)
    p.start()
    yield p
    p.stop()


def write_csv(path: Path, rows: int, seed: int = 1) -> None:
    import random

    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", *FEATURES])
        for i in range(rows):
            w.writerow([f"r{i}", *(round(rng.gauss(0, 1), 4) for _ in FEATURES)])


def setup(proc, tmp_path: Path, rows: int) -> tuple[Path, Path]:
    """vision/iris v1 (sklearn, signature [-1, 4]) and vision/flowers v1 (``rows`` rows in data/part.csv)."""
    from yitong_lab.client import Client
    from yitong_lab.datasets.sdk import Datasets
    from yitong_lab.models.sdk import Models

    model_dir, data_dir = tmp_path / "model", tmp_path / "flowers"
    model_dir.mkdir()
    subprocess.run([MLSERVER_PY, "-c", TRAIN, str(model_dir)], check=True)
    write_csv(data_dir / "data" / "part.csv", rows)
    (data_dir / "README.txt").write_text("not a CSV: not read\n")
    with Client(proc.base.rstrip("/"), proc.hub.tokens["alice"]) as c:
        signature = {"inputs": [{"name": "predict", "datatype": "FP64", "shape": [-1, 4]}], "outputs": []}
        Models(c).register("vision/iris", model_dir, framework="sklearn", signature=signature, progress=None)
        Datasets(c).commit(data_dir, "vision/flowers", progress=None)
    return model_dir / "model.joblib", data_dir / "data" / "part.csv"


def direct(model_file: Path, csv_file: Path) -> list[str]:
    done = subprocess.run([MLSERVER_PY, "-c", DIRECT, str(model_file), str(csv_file)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(",")


def predictions(proc, tmp_path: Path, ref: str) -> list[dict[str, str]]:
    """The rows of every part of the output version ``ref``, in order."""
    from yitong_lab.client import Client
    from yitong_lab.datasets.sdk import Datasets

    target = tmp_path / ("got-" + ref.replace("/", "-").replace("@", "-"))
    with Client(proc.base.rstrip("/"), proc.hub.tokens["alice"]) as c:
        Datasets(c).pull(ref, target, progress=None)
    rows: list[dict[str, str]] = []
    for part in sorted(target.rglob("part-*.csv")):
        with open(part, newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows


def batch(proc, body: dict, ref: str = "vision/iris/versions/1", who: str = "alice"):
    return proc.call(who, "POST", f"models/{ref}/batch", json=body)


def wait_batch(proc, job: int, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while (b := proc.call("alice", "GET", f"batch/{job}").json())["state"] not in ("succeeded", "failed", "cancelled"):
        assert time.monotonic() < deadline, (b, proc.log.read_text()[-3000:])
        time.sleep(0.3)
    return b


def test_batch_predictions_equal_a_direct_predict_with_lineage_and_progress(proc, tmp_path):
    model_file, csv_file = setup(proc, tmp_path, rows=2500)
    body = {"input": "vision/flowers@1", "output": "vision/flowers-preds", "keep": ["id"], "chunk_rows": 1000}
    r = batch(proc, body)
    assert r.status_code == 201, r.text
    b = r.json()
    assert (b["model"], b["input"], b["output"], b["columns"]) == (
        "vision/iris@1",
        "vision/flowers@1",
        "vision/flowers-preds",
        FEATURES,
    )
    done = wait_batch(proc, b["job"])
    logs = proc.call("alice", "GET", f"jobs/{b['job']}/logs").text
    assert done["state"] == "succeeded", (done, logs)
    assert done["version"] == 1 and done["progress"] | {} == {
        "chunks": 3,
        "chunks_done": 3,
        "skipped": 0,
        "rows": 2500,
        "rows_total": 2500,
    }
    assert "predicted 2500 rows in 3 chunks" in logs and "committed vision/flowers-preds v1" in logs, logs

    got = predictions(proc, tmp_path, "vision/flowers-preds@1")
    assert [row["id"] for row in got] == [f"r{i}" for i in range(2500)]
    assert [row["prediction"] for row in got] == direct(model_file, csv_file)

    v = proc.call("alice", "GET", "datasets/vision/flowers-preds/versions/1").json()
    assert v["lineage"]["job"] == b["job"] and v["lineage"]["model"] == "vision/iris@1"
    flowers = proc.call("alice", "GET", "datasets/vision/flowers/versions/1").json()
    assert v["lineage"]["inputs"] == [
        {"dataset": "vision/flowers", "version": 1, "manifest": flowers["manifest"], "path": ""}
    ]
    assert v["author"] == "alice" and "batch job" in v["message"]
    files = proc.call("alice", "GET", "datasets/vision/flowers-preds/versions/1/manifest").json()["files"]
    assert sorted(f["path"] for f in files) == [f"data/part/part-00000{k}.csv" for k in range(3)]
    # the job's ledger record names both inputs, pinned by content hash
    run = proc.call("alice", "GET", f"runs/{done_runs(proc, b['job'])[-1]}").json()
    assert {i["mount"] for i in run["inputs"]} == {"model", "data"}

    # the commit route belongs to the job: its owner's own token is not enough; bob sees nothing
    for proof in ({}, {"X-Yitong-Job-Token": "guess"}):
        headers = {"Authorization": f"token {proc.hub.tokens['alice']}", **proof}
        again = httpx.post(f"{proc.base}batch/{b['job']}/commit", json={"files": []}, headers=headers)
        assert again.status_code == 403 and "only job" in again.json()["detail"], again.text
    assert proc.call("bob", "GET", f"batch/{b['job']}").status_code == 404
    assert proc.call("bob", "POST", f"batch/{b['job']}/commit", json={"files": []}).status_code == 404


PARQUET = """
import sys, joblib, numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
out, rows = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(3)
frame = pd.DataFrame({"id": [f"p{i}" for i in range(rows)], **{c: rng.normal(size=rows) for c in "abcd"}})
frame.index = frame.index + 100  # pandas writes its index beside the columns: not a feature
pq.write_table(pa.Table.from_pandas(frame), out, row_group_size=700)  # row groups across chunks
"""
# the output parts read back, and the peer: a direct predict over the same rows
PARQUET_CHECK = """
import sys, json, glob, joblib, pandas as pd
model = joblib.load(sys.argv[1])
frame = pd.read_parquet(sys.argv[2])
parts = sorted(glob.glob(sys.argv[3] + "/**/part-*.parquet", recursive=True))
got = pd.concat([pd.read_parquet(p) for p in parts])
print(json.dumps({"parts": len(parts), "columns": list(got.columns), "ids": got["id"].tolist(),
    "got": [int(v) for v in got["prediction"]], "want": [int(v) for v in model.predict(frame[list("abcd")].to_numpy())],
    "ids_want": frame["id"].tolist()}))
"""


def test_parquet_in_parquet_out(proc, tmp_path):
    from yitong_lab.client import Client
    from yitong_lab.datasets.sdk import Datasets

    model_file, _ = setup(proc, tmp_path, rows=10)
    source = tmp_path / "tables" / "t" / "rows.parquet"
    source.parent.mkdir(parents=True)
    subprocess.run([MLSERVER_PY, "-c", PARQUET, str(source), "2500"], check=True)
    with Client(proc.base.rstrip("/"), proc.hub.tokens["alice"]) as c:
        Datasets(c).commit(tmp_path / "tables", "vision/tables", progress=None)
    body = {"input": "vision/tables@1", "output": "vision/tables-preds", "keep": ["id"], "chunk_rows": 1000}
    r = batch(proc, body)
    assert r.status_code == 201, r.text
    assert r.json()["columns"] == FEATURES  # the footer's schema, read by the service without pyarrow
    done = wait_batch(proc, r.json()["job"])
    assert done["state"] == "succeeded", (done, proc.call("alice", "GET", f"jobs/{done['job']}/logs").text)
    assert done["progress"]["rows_total"] == 2500 and done["progress"]["chunks"] == 3
    files = proc.call("alice", "GET", "datasets/vision/tables-preds/versions/1/manifest").json()["files"]
    assert sorted(f["path"] for f in files) == [f"t/rows/part-00000{k}.parquet" for k in range(3)]
    target = tmp_path / "got-tables"
    with Client(proc.base.rstrip("/"), proc.hub.tokens["alice"]) as c:
        Datasets(c).pull("vision/tables-preds@1", target, progress=None)
    out = subprocess.run(
        [MLSERVER_PY, "-c", PARQUET_CHECK, str(model_file), str(source), str(target)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert (seen["parts"], seen["columns"]) == (3, ["id", "prediction"])
    assert seen["ids"] == seen["ids_want"] and seen["got"] == seen["want"]
    # a column the file lacks is refused at submit, from the footer
    r = batch(proc, body | {"columns": ["a", "zz", "c", "d"]})
    assert r.status_code == 422 and r.json()["detail"].startswith(
        "t/rows.parquet has no column zz (it has id, a, b, c, d)"
    )


def done_runs(proc, job: int) -> list[int]:
    return proc.call("alice", "GET", f"jobs/{job}").json()["runs"]


def _predicting(job_dir: Path) -> int | None:
    """The pid of the job's prediction process (the framework interpreter), once it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"yitong_lab.models.batch_predict" in argv and str(job_dir).encode() in b" ".join(argv):
            return int(entry.name)
    return None


def test_kill9_resumes_at_the_first_missing_chunk(proc, tmp_path):
    # 200 chunks of 1,000 rows: seconds of work, killed after the first 10 are written
    model_file, csv_file = setup(proc, tmp_path, rows=200_000)
    body = {"input": "vision/flowers", "output": "vision/resumed", "keep": ["id"], "chunk_rows": 1000, "retries": 1}
    r = batch(proc, body)
    assert r.status_code == 201, r.text
    job = r.json()["job"]
    parts = tmp_path / "data" / "jobs" / str(job) / "outputs" / "predictions" / "data" / "part"
    deadline = time.monotonic() + 120
    while len(list(parts.glob("part-*.csv"))) < 10:
        assert time.monotonic() < deadline, proc.log.read_text()[-3000:]
        time.sleep(0.02)
    pid = _predicting(tmp_path / "data")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    written = len(list(parts.glob("part-*.csv")))
    done = wait_batch(proc, job)
    logs = proc.call("alice", "GET", f"jobs/{job}/logs").text
    assert done["state"] == "succeeded" and done["attempts"] == 2, (done, logs)
    skipped = int(re.search(r"\((\d+) written by an earlier attempt, skipped\)", logs)[1])
    assert 10 <= written <= skipped < 200, (written, skipped)
    assert done["progress"]["skipped"] == skipped and done["progress"]["chunks_done"] == 200
    got = predictions(proc, tmp_path, "vision/resumed@1")
    assert [row["id"] for row in got] == [f"r{i}" for i in range(200_000)]
    assert [row["prediction"] for row in got] == direct(model_file, csv_file)


REFUSALS = [
    # (who, model path, body changes, status, sentence)
    ("alice", "vision/iris/versions/7", {}, 404, "model vision/iris has no version or alias 7"),
    ("alice", "vision/nope/versions/1", {}, 404, "there is no model vision/nope"),
    ("bob", "vision/iris/versions/1", {}, 404, "there is no model vision/iris"),
    ("alice", "vision/iris/versions/1", {"input": "nlp/secret@1"}, 404, "there is no dataset nlp/secret"),
    ("alice", "vision/iris/versions/1", {"input": "vision/flowers@9"}, 404, "dataset vision/flowers has no version"),
    (
        "alice",
        "vision/iris/versions/1",
        {"columns": ["a", "b", "zz"]},
        422,
        "data/part.csv has no column zz (it has id, a, b, c, d)",
    ),
    ("alice", "vision/iris/versions/1", {"columns": ["a", "b"]}, 422, "the model takes 4 features; 2 columns"),
    ("alice", "vision/iris/versions/1", {"keep": []}, 422, "the model takes 4 features; 5 columns"),
    (
        "alice",
        "vision/iris/versions/1",
        {"path": "README.txt"},
        422,
        "input vision/flowers@1 under README.txt has no .csv or .parquet file",
    ),
    ("alice", "vision/iris/versions/1", {"output": "nlp/preds"}, 422, "the model's VC vision"),
    ("alice", "vision/iris/versions/1", {"output": "vision/model-iris"}, 422, "holds a model's files"),
    ("alice", "vision/iris/versions/1", {"chunk_rows": 0}, 422, "chunk_rows"),
]


def test_refusals_are_sentences_and_queue_nothing(proc, tmp_path):
    setup(proc, tmp_path, rows=10)
    base = {"input": "vision/flowers@1", "output": "vision/preds", "keep": ["id"]}
    before = len(proc.call("admin", "GET", "jobs").json())
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Models

    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / "model.py").write_text("x = 1\n")
    with Client(proc.base.rstrip("/"), proc.hub.tokens["alice"]) as c:  # a version MLServer alone can call
        Models(c).register("vision/custom", custom, framework="python", progress=None)
    refusals = [
        *REFUSALS,
        (
            "alice",
            "vision/custom/versions/1",
            {},
            422,
            "vision/custom v1 is python; batch inference runs sklearn, xgboost, lightgbm, onnx versions",
        ),
    ]
    for who, path, change, status, sentence in refusals:
        r = batch(proc, base | change, ref=path, who=who)
        assert r.status_code == status and sentence in r.json()["detail"], (who, path, change, r.status_code, r.text)
    assert len(proc.call("admin", "GET", "jobs").json()) == before
    assert proc.call("alice", "GET", "datasets/vision/preds").status_code == 404  # no output made either
    # a job that is no batch job has no batch view and commits nothing
    plain = proc.call(
        "alice",
        "POST",
        "jobs",
        json={"name": "p", "vc": "vision", "environment": {"kernel": "python3"}, "command": ["true"]},
    )
    assert (
        proc.call("alice", "GET", f"batch/{plain.json()['id']}")
        .json()["detail"]
        .endswith("is not a batch inference job")
    )


def docs_commands() -> list[str]:
    """The commands of docs/models.md's "Batch inference" section (its first block)."""
    text = (ROOT / "docs" / "models.md").read_text()
    section = text.split("## Batch inference", 1)[1]
    block = section.split("```\n", 2)[1]
    return [line.strip() for line in block.splitlines() if line.startswith(("yt ", "%yt "))]


def test_docs_batch_commands_run_verbatim(proc, tmp_path, monkeypatch, capsys):
    from helpers import ipython

    from yitong_lab.cli.grammar import run

    setup(proc, tmp_path, rows=300)
    monkeypatch.delenv("YITONG_API_URL", raising=False)
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    env = {"YT_API_URL": proc.base.rstrip("/"), "YT_TOKEN": proc.hub.tokens["alice"]}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    commands = docs_commands()
    assert [c.split()[:3] for c in commands] == [
        ["yt", "model", "batch"],
        ["yt", "model", "batch-show"],
        ["yt", "data", "show"],
        ["%yt", "model", "batch"],
    ]
    outputs = []
    for line in commands[:3]:
        assert run(shlex.split(line)[1:]) == 0, (line, capsys.readouterr())
        outputs.append(capsys.readouterr().out)
    head = "batch job 1: vision/iris@1 over vision/flowers@1 -> vision/flowers-preds: succeeded; 300 of 300 rows"
    assert outputs[0].startswith(head) and outputs[0].endswith("; predictions: vision/flowers-preds v1\n"), outputs
    assert outputs[1] == outputs[0]
    assert re.search(r"made by:\s+batch job 1: vision/iris@1 over vision/flowers@1\n", outputs[2]), outputs[2]

    # the notebook line, verbatim: the alias production, the latest input; the same predictions
    # are the same files, so the output stays v1
    assert proc.call("alice", "PUT", "models/vision/iris/aliases/production", json={"version": 1}).status_code == 200
    magic = ipython(commands[3], **env)
    assert magic.stdout.startswith(
        "batch job 2: vision/iris@1 over vision/flowers@1 -> vision/flowers-preds: queued"
    ), (
        magic.stdout,
        magic.stderr,
    )
    done = wait_batch(proc, 2)
    assert (done["state"], done["version"]) == ("succeeded", 1), done
    assert len(proc.call("alice", "GET", "datasets/vision/flowers-preds/versions").json()) == 1
