"""Datasets end to end: `yt data` against the real platform service and store.

Also the crash test of issue 3 against the real service: `yt data commit` is killed with
SIGKILL at a random point 20 times; afterwards no version is partial and the store verifies.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from stack import YT

pytestmark = pytest.mark.e2e


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def test_commit_log_diff_tag_pull_open_delete(stack, alice_token, bob_token, admin_token, tmp_path):
    src = tmp_path / "imgs"
    v1 = {f"train/{i:03d}.png": os.urandom(4096) for i in range(50)}
    v1["big.bin"] = os.urandom(3 << 20)  # over the pack threshold: a streamed upload
    v1["labels.csv"] = b"id,label\n1,cat\n"
    write_tree(src, v1)
    stack.yt(
        alice_token, "data", "commit", str(src), "vision/mnist", "-m", "first", YITONG_CACHE_DIR=str(tmp_path / "c")
    )
    (src / "labels.csv").write_bytes(b"id,label\n1,dog\n")
    (src / "train" / "000.png").unlink()
    (src / "extra.txt").write_bytes(b"new")
    stack.yt(
        alice_token,
        "data",
        "commit",
        str(src),
        "vision/mnist",
        "-m",
        "cleaned labels",
        YITONG_CACHE_DIR=str(tmp_path / "c"),
    )

    with stack.platform_client(alice_token) as api:
        versions = api.get("/datasets/vision/mnist/versions").json()
        assert [v["number"] for v in versions] == [2, 1]
        assert versions[0]["parent"] == 1 and versions[0]["message"] == "cleaned labels"
        assert versions[0]["author"] == "alice" and versions[0]["files"] == 52
        diff = api.get("/datasets/vision/mnist/diff", params={"from": 1, "to": 2}).json()
    assert [f["path"] for f in diff["added"]] == ["extra.txt"]
    assert [f["path"] for f in diff["removed"]] == ["train/000.png"]
    assert [f["path"] for f in diff["changed"]] == ["labels.csv"]
    text = stack.yt(alice_token, "data", "diff", "vision/mnist@1", "@2").stdout
    assert "extra.txt" in text and "train/000.png" in text and "labels.csv" in text

    stack.yt(alice_token, "data", "tag", "vision/mnist@1", "raw")
    out = tmp_path / "pulled"
    stack.yt(alice_token, "data", "pull", "vision/mnist@raw", str(out), YITONG_CACHE_DIR=str(tmp_path / "c2"))
    assert tree(out) == v1
    # pulling v2 over it transfers only what differs; a file that is already right is not rewritten
    untouched = out / "train" / "001.png"
    inode = untouched.stat().st_ino
    stack.yt(alice_token, "data", "pull", "vision/mnist@2", str(out), "--delete", YITONG_CACHE_DIR=str(tmp_path / "c2"))
    assert tree(out) == tree(src)
    assert untouched.stat().st_ino == inode

    path = Path(stack.yt(alice_token, "data", "open", "vision/mnist@2").stdout.strip().splitlines()[-1])
    assert tree(path) == tree(src)
    for p in [path, *path.rglob("*")]:  # read-only: no write bit anywhere (root ignores modes)
        assert not p.stat().st_mode & 0o222, p

    # bob (other VC) sees nothing and cannot read
    assert "mnist" not in stack.yt(bob_token, "data", "ls").stdout
    r = stack.yt(bob_token, "data", "pull", "vision/mnist", str(tmp_path / "bob"), check=False)
    assert r.returncode == 1 and "vision/mnist" in r.stderr

    # a single file is a version of one file
    stack.yt(alice_token, "data", "commit", str(src / "labels.csv"), "vision/labels", "-m", "one file")
    with stack.platform_client(alice_token) as api:
        files = api.get("/datasets/vision/labels/versions/1/manifest").json()["files"]
    assert [f["path"] for f in files] == ["labels.csv"]

    stack.yt(alice_token, "data", "rm", "vision/mnist@1", "--yes")
    with stack.platform_client(alice_token) as api:
        assert [v["number"] for v in api.get("/datasets/vision/mnist/versions").json()] == [2]
    stack.yt(admin_token, "data", "gc")
    verify = stack.yt(admin_token, "data", "verify").stdout
    assert "corrupt" not in verify.lower() or "0 corrupt" in verify.lower()


def test_kill_commit_twenty_times_never_partial(stack, alice_token, admin_token, tmp_path):
    src = tmp_path / "data"
    files = {f"part{i // 100}/{i:04d}.bin": os.urandom(2048) for i in range(400)}
    files["weights.bin"] = os.urandom(4 << 20)
    write_tree(src, files)
    env = stack.cli_env(alice_token, YITONG_CACHE_DIR=str(tmp_path / "c"))
    rng = random.Random(20261122)
    for round_ in range(20):
        # change something each round so every commit has new content to upload
        (src / "round.txt").write_text(str(round_))
        (src / f"part{round_ % 4}" / f"new{round_}.bin").write_bytes(os.urandom(4096))
        proc = subprocess.Popen(
            [YT, "data", "commit", str(src), "vision/crash", "-m", f"round {round_}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with stack.platform_client(alice_token) as api:
        r = api.get("/datasets/vision/crash/versions")
        versions = r.json() if r.status_code == 200 else []
        for v in versions:  # every version that exists is whole: each file downloads and matches
            manifest = api.get(f"/datasets/vision/crash/versions/{v['number']}/manifest").json()
            assert len(manifest["files"]) == v["files"]
    out = tmp_path / "check"
    if versions:
        stack.yt(alice_token, "data", "pull", f"vision/crash@{versions[0]['number']}", str(out))
        assert len(tree(out)) == versions[0]["files"]
    with stack.platform_client(admin_token) as api:
        report = api.post("/storage/verify").json()
    assert report["corrupt"] == [] and report["missing"] == []
