"""Storage quotas in multi-user mode, as root: a job that writes to its outputs (as its own
account) counts toward its VC once the storage walk has measured its folder, and the VC's next
upload past the quota is refused with the sentence naming that use; the job's links are counted
as links, never followed (a job cannot make the walk count, or read, what it points at)."""

from __future__ import annotations

import os
import time

import httpx
import pytest
from blake3 import blake3

from tests.services.core.test_confinement import MultiUser

KiB = 1024
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="multi-user mode needs root (CI runs as root)")

WRITE = r"""
import os
out = os.environ["YITONG_OUTPUT_DIR"]
with open(os.path.join(out, "weights.bin"), "wb") as f:
    f.write(b"w" * (700 * 1024))
os.symlink("/usr", os.path.join(out, "usr"))  # a hostile link: counted as itself
os.link(os.path.join(out, "weights.bin"), os.path.join(out, "again.bin"))  # the same bytes once
"""


@pytest.fixture
def storage_user(hub, tmp_path):
    m = MultiUser(hub, tmp_path, storage={"usage_interval": 1})
    try:
        m.start()
        yield m
    finally:
        m.stop()


@needs_root
def test_a_jobs_outputs_count_toward_its_vc_after_it_ends(storage_user: MultiUser):
    mu = storage_user
    person = mu.users[0]
    r = mu.call("admin", "PATCH", "vcs/default", json={"storage_quota": "1Mi"})
    assert r.status_code == 200, r.text
    job = mu.submit(person, {"name": "writer", "command": ["python", "-c", WRITE]})
    assert job["state"] == "succeeded", (job, mu.log.read_text()[-2000:])
    deadline = time.monotonic() + 60
    while True:
        storage = mu.call(person, "GET", "vcs/default").json()["storage"]
        if storage["job_outputs"] >= 700 * KiB:
            break
        assert time.monotonic() < deadline, (storage, mu.log.read_text()[-2000:])
        time.sleep(0.5)
    assert storage["job_outputs"] < 800 * KiB  # the link is not followed, the hard link counts once
    assert storage["used"] == storage["store"] + storage["job_outputs"]
    blob = os.urandom(400 * KiB)
    h = blake3(blob).hexdigest()
    headers = {"Upload-Offset": "0", "Upload-Length": str(len(blob)), "Authorization": f"token {mu.tokens[person]}"}
    url = f"{mu.base}objects/{h}/upload"
    r = httpx.patch(url, content=blob, headers=headers, params={"vc": "default"}, timeout=60)
    assert r.status_code == 413, r.text
    assert r.json()["detail"].startswith("VC default: storage quota 1Mi, ") and "adds 400Ki" in r.json()["detail"]
    assert not (mu.data / "store" / "objects" / h[:2] / h).exists()
