"""The data directory's disk fills up under a running platform: reads still answer, every write
is refused with a JSON 507 that says which storage is full (never a 500, a reset or a 401), the
and everything works again once space
returns.

The disk is real: a 96 MiB tmpfs mounted for this test (root, as CI is) holding the whole data
directory (hub and platform databases, store, logs), filled by a file until ENOSPC.
"""

from __future__ import annotations

import os
import time

import pytest
from helpers import fill, tmpfs_disk
from stack import Stack

pytestmark = pytest.mark.e2e

SETTINGS = {
    "backend": "local",
    "hub": {"admin_users": ["admin"]},
    "backends": {"local": {"mode": "single-person"}},
    "profiles": {"cpu-small": {"cpu": 0.5, "memory": "1Gi"}},
    "vcs": {"default": {"groups": ["everyone"], "profiles": ["cpu-small"], "quota": {"cpu": 4, "memory": "8Gi"}}},
    "groups": {"everyone": ["admin", "alice"]},
}


@pytest.fixture
def small_disk(tmp_path):
    with tmpfs_disk(tmp_path / "disk", "96m", "0755") as disk:
        yield disk


def test_a_full_data_disk_is_a_clear_507_and_passes(small_disk, tmp_path):
    stack = Stack(small_disk, SETTINGS, {"admin": "admin-pw-1234", "alice": "alice-pw-1234"}, cwd=tmp_path)
    stack.start()
    try:
        token = stack.token("alice")
        api = stack.platform_client(token)
        for name in ("before", "big"):
            assert api.post("/datasets", json={"vc": "default", "name": name}).status_code == 201
        work = tmp_path / "imgs"
        work.mkdir()
        for i in range(20):
            (work / f"{i}.bin").write_bytes(os.urandom(64 * 1024))

        filler = small_disk / "filler"
        fill(filler)
        time.sleep(1)

        # reads answer; the caller's token is still theirs (no 401)
        for path in ("/vcs", "/jobs", "/datasets"):
            r = api.get(path)
            assert r.status_code == 200, (path, r.status_code, r.text[:300])
        # every write: a JSON 507 naming what is full, nothing half-kept
        r = api.post("/datasets", json={"vc": "default", "name": "during"})
        assert r.status_code == 507 and r.headers["content-type"] == "application/json", r.text[:300]
        assert "no space left" in r.json()["detail"] and str(small_disk) not in r.json()["detail"]
        done = stack.yt(token, "data", "commit", str(work), "default/before", "-m", "full", check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        line = done.stderr.strip().splitlines()[-1]
        assert line.startswith("yt: ") and (" is full" in line or "no space left" in line), line
        assert str(small_disk) not in line and "HTTP 500" not in line
        # a pack larger than anything left: a sentence, not a dropped connection
        big = tmp_path / "big"
        big.mkdir()
        (big / "x.bin").write_bytes(os.urandom(8 << 20))
        done = stack.yt(token, "data", "commit", str(big), "default/big", check=False)
        assert done.returncode == 1 and "reset" not in done.stderr.lower() and "HTTP 500" not in done.stderr
        assert " is full" in done.stderr or "no space left" in done.stderr, done.stderr

        filler.unlink()
        time.sleep(1)
        # space is back: the same commands work, and the dataset has exactly the one new version
        assert api.post("/datasets", json={"vc": "default", "name": "after"}).status_code == 201
        done = stack.yt(token, "data", "commit", str(work), "default/before", "-m", "again", check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert api.get("/datasets/default/before").json()["versions"] == 1
        assert api.get("/datasets/default/during").status_code == 404
    finally:
        stack.stop()
