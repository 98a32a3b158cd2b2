"""``yt model`` and ``%yt model`` against the platform service as a real process: register from
a directory and from a finished job (``--from-job --path``), alias, compare, show, pull."""

from __future__ import annotations

import json
import sys

import pytest
from helpers import ipython, yt_as
from jobs_helpers import py_job

from yitong_lab.cli.grammar import run


@pytest.fixture
def yt_env(proc, monkeypatch):
    return yt_as(monkeypatch, proc.base, proc.hub.tokens["alice"])


def test_register_alias_compare_show_pull(proc, yt_env, tmp_path, capsys):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.joblib").write_bytes(b"w1")
    sig = tmp_path / "sig.json"
    sig.write_text(json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}))
    argv = ["model", "register", "vision/iris", str(model), "--framework", "sklearn", "--signature", str(sig)]
    assert run([*argv, "--metric", "accuracy=0.8", "--tag", "team=cv"]) == 0
    assert capsys.readouterr().out == "registered vision/iris v1: 1 file, 2 B\n"

    # the same from a notebook: %yt model register
    (model / "model.joblib").write_bytes(b"w22")
    magic = ipython(f"%yt model register vision/iris {model} --metric accuracy=0.9 -m retrained", **yt_env)
    assert magic.stdout.strip() == "registered vision/iris v2: 1 file, 3 B", magic.stderr

    # from a finished job's outputs
    code = (
        "import os, pathlib; out = pathlib.Path(os.environ['YITONG_OUTPUT_DIR'], 'out', 'model');"
        "out.mkdir(parents=True); (out / 'model.joblib').write_bytes(b'from the job')"
    )
    r = proc.call("alice", "POST", "jobs", json=py_job("train", "vision", code, code={"commit": "abc123"}))
    assert r.status_code == 201, r.text
    job = r.json()
    assert proc.wait("alice", job["id"])["state"] == "succeeded"
    assert run(["model", "register", "vision/iris", "--from-job", str(job["id"]), "--path", "out/model"]) == 0
    assert capsys.readouterr().out == "registered vision/iris v3: 1 file, 12 B\n"

    assert run(["model", "alias", "vision/iris@2", "production"]) == 0
    assert capsys.readouterr().out == "vision/iris@production is now v2\n"
    assert run(["model", "alias", "vision/iris@3", "production"]) == 0
    assert capsys.readouterr().out == "vision/iris@production is now v3\n"
    assert run(["model", "compare", "vision/iris", "1", "2"]) == 0
    assert capsys.readouterr().out == "METRIC    v1   v2\naccuracy  0.8  0.9\n"
    assert run(["model", "show", "vision/iris@production"]) == 0
    out = capsys.readouterr().out
    assert f"From job:   {job['id']} (run " in out and "Code:       abc123\n" in out, out
    assert run(["model", "ls"]) == 0
    assert capsys.readouterr().out == (
        "MODEL        VERSIONS  LATEST  ALIASES        DESCRIPTION\nvision/iris  3         v3      production=v3  -\n"
    )
    assert run(["model", "pull", "vision/iris@production", str(tmp_path / "got")]) == 0
    capsys.readouterr()
    assert (tmp_path / "got" / "model.joblib").read_bytes() == b"from the job"

    # refusals: the service's sentence, exit 1; usage errors exit 2
    assert run(["model", "register", "vision/iris", "--from-job", "999999"]) == 1
    assert capsys.readouterr().err == "yt: there is no job 999999\n"
    assert run(["model", "register", "vision/iris", str(model), "--metric", "acc=high"]) == 2
    assert "is not a number" in capsys.readouterr().err
    assert run(["model", "show", "nlp/secret"]) == 1
    assert capsys.readouterr().err == "yt: there is no model nlp/secret\n"
    assert sys.modules.get("yitong_lab.models.sdk") is not None
