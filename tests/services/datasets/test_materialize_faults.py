"""The disk refuses a version's tree (datasets/tree_errors.py): materialised for the SDK
(``POST .../materialize``) or for a job's inputs, the answer is a JSON sentence that names the
dataset path the person gave and which of the platform's folders refused it, never the server's
paths: 422 for a path the disk cannot hold, 507 for a full disk. The failures are real: a
materialisation folder so deep that a 3,000-byte dataset path (the store's limit is 3,072) passes
the kernel's PATH_MAX (ENAMETOOLONG), and a 1 MiB tmpfs (root, as CI is) that fills (ENOSPC)."""

from __future__ import annotations

import os

import pytest
from helpers import tmpfs_disk
from jobs_helpers import py_job, wait_state

from yitong_services.datasets.tree_errors import TREES, refusal

LONG = "/".join(f"{i:02d}" + "p" * 240 for i in range(12))  # 2,915 bytes, names of 242


def _deep(root) -> str:
    """A folder about 1,250 bytes deep under ``root``."""
    deep = root.joinpath(*(["d" * 250] * 5))
    deep.mkdir(parents=True)
    return str(deep)


def _no_server_path(detail: str, *paths: str) -> None:
    assert not any(p in detail for p in paths), detail
    assert "/tmp" not in detail and "Errno" not in detail, detail


async def test_a_path_too_long_for_the_disk_is_a_422_naming_it(service_factory, tmp_path):
    where = _deep(tmp_path / "m")
    async with service_factory(storage={"materialize_dir": where}, jobs={"poll_interval": 0.1}) as svc:
        r = await svc.data.push("alice", "vision/long", {"ok.txt": b"fine", LONG: b"deep"})
        assert r.status_code == 201, r.text
        r = await svc.call("alice", "POST", "datasets/vision/long/versions/1/materialize")
        assert r.status_code == 422, r.text
        detail = r.json()["detail"]
        assert detail.startswith(f"dataset path '{LONG[:40]}...{LONG[-40:]}' cannot be written in {TREES}: ")
        assert "longer than that disk allows" in detail
        _no_server_path(detail, where, str(tmp_path))
        assert os.listdir(where) == []  # no half tree left

        # the same for a job whose input it is: failed, with the same sentence as its reason
        job = py_job("reader", "vision", "print('never')", inputs=[{"dataset": "vision/long@1"}])
        r = await svc.call("alice", "POST", "jobs", json=job)
        assert r.status_code == 201, r.text
        done = await wait_state(svc, "alice", r.json()["id"], timeout=30)
        assert done["state"] == "failed", done
        assert done["reason"] == f"could not start: {detail}", done["reason"]


@pytest.fixture
def tiny_disk(tmp_path):
    with tmpfs_disk(tmp_path / "tiny", "1m", "0700") as disk:
        yield disk


async def test_a_full_materialisation_disk_is_a_507(service_factory, tiny_disk):
    async with service_factory(storage={"materialize_dir": str(tiny_disk)}) as svc:
        # the cache is on the big disk: the tree is a copy (EXDEV), and 2 MiB do not fit in 1
        blobs = {"a.bin": os.urandom(1 << 20), "b/c.bin": os.urandom(1 << 20)}
        assert (await svc.data.push("alice", "vision/big", blobs)).status_code == 201
        r = await svc.call("alice", "POST", "datasets/vision/big/versions/1/materialize")
        assert r.status_code == 507, r.text
        detail = r.json()["detail"]
        assert detail.startswith(f"{TREES} is full: dataset path '")
        assert detail.endswith("could not be written; an administrator must free space there")
        _no_server_path(detail, str(tiny_disk))
        assert os.listdir(tiny_disk) == []  # the half tree removed: the space is back
        # a small version still fits
        assert (await svc.data.push("alice", "vision/small", {"s.txt": b"small"})).status_code == 201
        r = await svc.call("alice", "POST", "datasets/vision/small/versions/1/materialize")
        assert r.status_code == 200 and r.json()["path"].startswith(str(tiny_disk)), r.text


@pytest.mark.parametrize(
    ("errno_", "status", "start"),
    [
        (28, 507, f"{TREES} is full: dataset path 'a/b'"),
        (36, 422, f"dataset path 'a/b' cannot be written in {TREES}: the path"),
        (40, 422, f"dataset path 'a/b' cannot be written in {TREES} (too many levels of symbolic links)"),
        (13, 409, f"dataset path 'a/b' could not be written in {TREES} (permission denied); an administrator"),
    ],
)
def test_refusals(errno_, status, start):
    r = refusal(OSError(errno_, os.strerror(errno_), "/srv/secret/place"), TREES, "a/b")
    assert r.status == status and r.detail.startswith(start) and "/srv" not in r.detail
