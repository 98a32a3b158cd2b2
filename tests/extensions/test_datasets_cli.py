"""``yt data`` and ``%yt data`` against the stand-in platform API: texts, exit codes, the same
output from both, and ``kill -9`` in the middle of a commit never leaving a partial version."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from blake3 import blake3
from helpers import ipython

from yitong_lab.cli.grammar import run


@pytest.fixture
def imgs(tmp_path):
    root = tmp_path / "imgs"
    (root / "train").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"alpha")
    (root / "train" / "1.png").write_bytes(b"\x89PNG one")
    return root


def test_commit_log_show_diff_tag_pull_rm(yt_env, imgs, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")  # times are shown in the local zone
    time.tzset()
    assert run(["data", "commit", str(imgs), "vision/mnist", "-m", "first"]) == 0
    assert capsys.readouterr().out == "committed vision/mnist v1: 2 files, 13 B (uploaded 2 objects, 13 B)\n"
    assert run(["data", "commit", str(imgs), "vision/mnist", "-m", "again"]) == 0
    assert capsys.readouterr().out == "nothing changed: vision/mnist v1 already has this content (2 files, 13 B)\n"
    (imgs / "a.txt").write_bytes(b"alpha2")
    assert run(["data", "commit", str(imgs), "vision/mnist", "-m", "fix a"]) == 0
    capsys.readouterr()
    assert run(["data", "ls"]) == 0
    assert capsys.readouterr().out == (
        "DATASET       VISIBILITY  VERSIONS  LATEST  SIZE  DESCRIPTION\n"
        "vision/mnist  vc          2         v2      14 B  -\n"
    )
    assert run(["data", "log", "vision/mnist"]) == 0
    assert capsys.readouterr().out == (
        "VERSION  CREATED           AUTHOR  FILES  SIZE  PARENT  TAGS  MESSAGE\n"
        "v2       2025-01-02 00:00  alice   2      14 B  v1      -     fix a\n"
        "v1       2025-01-02 00:00  alice   2      13 B  -       -     first\n"
    )
    assert run(["data", "diff", "vision/mnist@1", "@2"]) == 0
    assert capsys.readouterr().out == "vision/mnist v1 -> v2: 0 added, 0 removed, 1 changed\nM a.txt  (5 B -> 6 B)\n"
    assert run(["data", "tag", "vision/mnist@1", "golden"]) == 0
    assert capsys.readouterr().out == "tagged vision/mnist v1 as golden\n"
    assert run(["data", "show", "vision/mnist@golden"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dataset:   vision/mnist\nversion:   v1\nparent:    -\n")
    assert "tags:      golden\n" in out
    assert f"\nPATH         SIZE  HASH\na.txt        5 B   {blake3(b'alpha').hexdigest()[:12]}\n" in out
    assert run(["data", "pull", "vision/mnist@golden", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out == (
        f"pulled vision/mnist v1 into {tmp_path / 'out'}: 2 files fetched (13 B), 0 unchanged, 0 deleted\n"
    )
    assert run(["data", "open", "vision/mnist", "--json"]) == 0
    assert Path(json.loads(capsys.readouterr().out)["path"], "a.txt").read_bytes() == b"alpha2"
    yt_env.datasets.refs[("vision/mnist", 1)] = "job 42"
    assert run(["data", "rm", "vision/mnist@1", "--yes"]) == 1
    assert capsys.readouterr().err == "yt: vision/mnist v1 is used by job 42\n"
    assert run(["data", "rm", "vision/mnist@2", "--yes"]) == 0
    assert capsys.readouterr().out == "deleted version vision/mnist@2\n"


@pytest.mark.parametrize(
    "argv, code, err",
    [
        (["data", "commit", "/nonexistent", "vision/x"], 2, "yt: /nonexistent is neither a directory nor a file\n"),
        (
            ["data", "log", "mnist"],
            2,
            "yt: 'mnist' is not a dataset name: use VC/NAME (a-z, 0-9, -), e.g. vision/mnist\n",
        ),
        (["data", "show", "vision/nope"], 1, "yt: no dataset vision/nope\n"),
        (["data", "gc"], 1, "yt: alice is not an administrator\n"),
        (
            ["data", "rm", "vision/x"],
            2,
            "yt: deleting dataset vision/x and all its versions cannot be undone: repeat with --yes\n",
        ),
    ],
)
def test_refusals(yt_env, capsys, argv, code, err):
    assert run(argv) == code
    assert capsys.readouterr().err == err


def test_admin_gc_verify(yt_env, imgs, monkeypatch, capsys):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "admin-token")
    assert run(["data", "commit", str(imgs), "vision/mnist"]) == 0
    yt_env.datasets.objects["f" * 64] = b"orphan"
    capsys.readouterr()
    assert run(["data", "gc"]) == 0
    assert capsys.readouterr().out == "removed 1 object (6 B) and 0 packs\n"
    assert run(["data", "verify"]) == 0
    assert capsys.readouterr().out == "checked 2 objects: all intact\n"
    yt_env.datasets.objects[blake3(b"alpha").hexdigest()] = b"rotten"
    assert run(["data", "verify"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("checked 2 objects: 1 corrupt, 0 missing\ncorrupt  ")
    assert captured.err == "yt: the store has 1 corrupt and 0 missing objects\n"
    yt_env.datasets.objects[blake3(b"alpha").hexdigest()] = b"alpha"
    yt_env.datasets.cache_corrupt = ["c" * 64]  # a job's input changed in place
    assert run(["data", "verify"]) == 1
    captured = capsys.readouterr()
    assert captured.out == (
        "checked 2 objects: 0 corrupt, 0 missing, 1 changed in the materialise cache\n"
        f"changed  {'c' * 64} (materialise cache)\n"
    )
    assert captured.err.endswith("; 1 objects of the materialise cache were changed\n")


def test_magic_prints_what_the_cli_prints(yt_env, yt, imgs):
    magic = ipython(f"%yt data commit {imgs} vision/mnist -m first")
    assert magic.stdout == "committed vision/mnist v1: 2 files, 13 B (uploaded 2 objects, 13 B)\n", magic.stderr
    (imgs / "b.txt").write_bytes(b"b")
    assert yt("data", "commit", str(imgs), "vision/mnist", "-m", "second").returncode == 0
    for argv in (
        ["commit", str(imgs), "vision/mnist", "-m", "no-op"],
        ["ls"],
        ["log", "vision/mnist"],
        ["diff", "vision/mnist@2"],
        ["show", "vision/mnist@1"],
        ["show", "vision/nope"],
    ):
        magic = ipython("%yt data " + " ".join(argv))
        cli = yt("data", *argv)
        assert magic.stdout == cli.stdout, argv
        assert cli.stderr.strip() in magic.stderr
        assert "Traceback" not in magic.stderr
    assert cli.stderr == "yt: no dataset vision/nope\n"


def test_kill_9_never_leaves_a_partial_version(yt_env, tmp_path):
    """20 times: start `yt data commit`, kill -9 it at a random moment. The service must never
    hold a version whose objects are not all stored (the stand-in counts version POSTs that name
    missing objects), and a final commit must give the whole tree back."""
    root = tmp_path / "data"
    root.mkdir()
    rng = random.Random(1234)
    files = {f"d{i % 7}/f{i}.bin": os.urandom(rng.randint(0, 6000)) for i in range(300)}
    files["big.bin"] = os.urandom(3 << 20)
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    yt_env.datasets.slow = 0.25  # object requests take a moment, so kills land mid-upload
    env = {**os.environ, "JUPYTERHUB_API_TOKEN": "alice-token"}
    script = Path(sys.executable).with_name("yt")
    outcomes = []
    for attempt in range(20):
        (root / "changing.txt").write_text(f"attempt {attempt}")  # every commit has something new
        proc = subprocess.Popen(
            [str(script), "data", "commit", str(root), "vision/killed", "-m", f"try {attempt}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(rng.uniform(0.05, 1.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcomes.append(proc.returncode)
        store = yt_env.datasets
        assert store.refused_versions == []
        for version in store.datasets.get("vision/killed", {}).get("versions", []):
            assert len(version["files"]) == len(files) + 1
            for f in version["files"]:
                assert f["hash"] in store.objects
    assert outcomes.count(-signal.SIGKILL) >= 10  # most attempts were really killed mid-way
    yt_env.datasets.slow = 0
    final = subprocess.run(
        [str(script), "data", "commit", str(root), "vision/killed", "-m", "final"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert final.returncode == 0, final.stderr
    out = tmp_path / "out"
    pulled = subprocess.run(
        [str(script), "data", "pull", "vision/killed", str(out)], env=env, capture_output=True, text=True, timeout=120
    )
    assert pulled.returncode == 0, pulled.stderr
    assert {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()} == {
        **files,
        "changing.txt": b"attempt 19",
    }
