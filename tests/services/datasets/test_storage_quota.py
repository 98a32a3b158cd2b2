"""A VC's storage quota, through the real service: uploads refused on their size before a byte
reaches the store, commits refused before their version exists, concurrent commits near the
limit, deletes and GC freeing what they held, the storage walk's figures and console row.

alice belongs to vision and default (conftest's hub); vision gets the quota, default has none.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from yitong_services.vcs.quantities import parse_bytes
from yitong_services.vcs.storage import refusal

PREFIX = "/services/yitong/"
KiB = 1024


@pytest.mark.parametrize(
    ("quota", "used", "adds", "expected"),
    [
        (None, 10**12, 10**12, None),
        (2**30, 0, 2**30, None),
        (2**30, 1, 2**30, "VC v: storage quota 1Gi, 1 in use, this commit adds 1Gi;"),
        (2**30, 900 * 2**20, 200 * 2**20, "VC v: storage quota 1Gi, 900Mi in use, this commit adds 200Mi;"),
        (0, 0, 0, None),  # nothing new: even a full VC may commit
    ],
)
def test_refusal_sentence(quota, used, adds, expected):
    got = refusal("v", quota, used, adds, "this commit")
    if expected is None:
        assert got is None
    else:
        assert got.startswith(expected) and "storage_quota" in got


@pytest.mark.parametrize(
    ("text", "value"), [("500Gi", 500 * 2**30), ("2T", 2 * 10**12), (1048576, 1048576), (None, None)]
)
def test_parse_bytes(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("bad", ["-1", "1.5", "lots", "1Qi"])
def test_parse_bytes_refuses(bad):
    with pytest.raises(ValueError):
        parse_bytes(bad)


def _store_files(svc) -> list[str]:
    root = Path(svc.ctx.storage.store.root)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _spool_files(svc) -> list[str]:
    return sorted(str(p) for p in svc.ctx.storage.spool.directory.rglob("*") if p.is_file())


async def _quota(svc, vc: str, value) -> dict:
    r = await svc.call("admin", "PATCH", f"vcs/{vc}", json={"storage_quota": value})
    assert r.status_code == 200, r.text
    return r.json()


async def _storage(svc, vc: str) -> dict:
    r = await svc.call("admin", "GET", f"vcs/{vc}")
    assert r.status_code == 200, r.text
    return r.json()["storage"]


async def _commit(svc, who: str, dataset: str, files: dict[str, bytes], upload_vc: str | None = "default"):
    """Upload (for ``upload_vc``) what is missing, then commit: the commit charges the dataset's VC."""
    data = svc.data
    await data.create(who, dataset)
    blobs = {data.b3(b): b for b in files.values()}
    r = await svc.call(who, "POST", "objects/missing", json={"hashes": list(blobs)})
    todo = [blobs[h] for h in r.json()["missing"]]
    if todo:
        params = {"vc": upload_vc} if upload_vc else {}
        r = await svc.call(who, "POST", "objects/pack", content=data.pack_of(todo), params=params)
        assert r.status_code == 200, r.text
    latest = (await svc.call(who, "GET", f"datasets/{dataset}")).json()["latest"]
    body = {"parent": latest, "files": data.entries(files)}
    return await svc.call(who, "POST", f"datasets/{dataset}/versions", json=body)


async def test_quota_is_set_shown_and_cleared(data_service):
    svc = data_service
    vc = await _quota(svc, "vision", "1Mi")
    assert vc["storage_quota"] == 2**20
    assert vc["storage"] == {"quota": 2**20, "used": 0, "store": 0, "job_outputs": 0, "measured": None}
    r = await svc.call("admin", "PATCH", "vcs/vision", json={"storage_quota": "lots"})
    assert r.status_code == 422 and "storage_quota" in r.text
    r = await svc.call("alice", "PATCH", "vcs/vision", json={"storage_quota": None})
    assert r.status_code == 403
    assert (await _quota(svc, "vision", None))["storage"]["quota"] is None
    usage = (await svc.call("admin", "GET", "usage")).json()
    assert {v["name"]: v["storage"]["quota"] for v in usage["vcs"]}["vision"] is None


@pytest.mark.parametrize("store_kind", ["local"], indirect=True)
async def test_resumable_upload_over_quota_is_refused_before_a_byte_is_written(data_service):
    svc = data_service
    await _quota(svc, "vision", 64 * KiB)
    blob = os.urandom(100 * KiB)
    h = svc.data.b3(blob)
    before_store, before_spool = _store_files(svc), _spool_files(svc)
    headers = {"Upload-Offset": "0", "Upload-Length": str(len(blob))}
    first = blob[: 50 * KiB]  # the first piece alone fits: refused on the declared length, not on what arrived
    r = await svc.call("alice", "PATCH", f"objects/{h}/upload", content=first, headers=headers, params={"vc": "vision"})
    assert r.status_code == 413, r.text
    detail = r.json()["detail"]
    assert detail.startswith("VC vision: storage quota 64Ki, 0 in use, the upload of object") and "adds 100Ki" in detail
    assert _store_files(svc) == before_store and _spool_files(svc) == before_spool
    # without ?vc= the bytes would be nobody's: refused while one of alice's VCs has a quota
    r = await svc.call("alice", "PATCH", f"objects/{h}/upload", content=blob, headers=headers)
    assert r.status_code == 422 and "?vc=" in r.json()["detail"]
    # a VC alice is not in answers as an unknown one
    r = await svc.call("alice", "PATCH", f"objects/{h}/upload", content=blob, headers=headers, params={"vc": "nlp"})
    assert r.status_code == 404
    assert _store_files(svc) == before_store and _spool_files(svc) == before_spool
    # within the quota it goes up, and counts
    small = os.urandom(60 * KiB)
    headers = {"Upload-Offset": "0", "Upload-Length": str(len(small))}
    hs = svc.data.b3(small)
    r = await svc.call(
        "alice", "PATCH", f"objects/{hs}/upload", content=small, headers=headers, params={"vc": "vision"}
    )
    assert r.status_code == 200 and r.json()["complete"], r.text
    assert (await _storage(svc, "vision"))["store"] == 60 * KiB


@pytest.mark.parametrize("store_kind", ["local"], indirect=True)
async def test_pack_over_quota_is_refused_declared_or_streamed(data_service):
    svc = data_service
    await _quota(svc, "vision", 64 * KiB)
    pack = svc.data.pack_of([os.urandom(40 * KiB), os.urandom(40 * KiB)])
    before = _store_files(svc)
    r = await svc.call("alice", "POST", "objects/pack", content=pack, params={"vc": "vision"})
    assert r.status_code == 413, r.text
    assert r.json()["detail"].startswith("VC vision: storage quota 64Ki, 0 in use, this pack upload adds")
    assert _store_files(svc) == before

    async def chunks():  # no Content-Length: bounded as it streams
        for i in range(0, len(pack), 8 * KiB):
            yield pack[i : i + 8 * KiB]

    r = await svc.call("alice", "POST", "objects/pack", content=chunks(), params={"vc": "vision"})
    assert r.status_code == 413, r.text
    assert "VC vision: storage quota 64Ki" in r.json()["detail"]
    assert _store_files(svc) == before  # the temp pack is gone too
    assert (await _storage(svc, "vision"))["used"] == 0


async def test_commit_over_quota_is_refused_and_creates_nothing(data_service):
    svc = data_service
    await _quota(svc, "vision", 64 * KiB)
    r = await _commit(svc, "alice", "vision/big", {"a.bin": os.urandom(40 * KiB), "b.bin": os.urandom(40 * KiB)})
    assert r.status_code == 413, r.text
    assert r.json()["detail"].startswith("VC vision: storage quota 64Ki, 0 in use, this commit adds 80Ki")
    assert (await svc.call("alice", "GET", "datasets/vision/big/versions")).json() == []
    assert (await _storage(svc, "vision"))["used"] == 0
    r = await _commit(svc, "alice", "vision/big", {"a.bin": os.urandom(40 * KiB)})
    assert r.status_code == 201, r.text
    assert (await _storage(svc, "vision"))["store"] == 40 * KiB
    # the same bytes again (another dataset of the VC) add nothing: a VC pays once for an object
    same = (await svc.call("alice", "GET", "datasets/vision/big/versions/latest/manifest")).json()["files"]
    await svc.data.create("alice", "vision/copy")
    r = await svc.call("alice", "POST", "datasets/vision/copy/versions", json={"parent": None, "files": same})
    assert r.status_code == 201, r.text
    assert (await _storage(svc, "vision"))["store"] == 40 * KiB


async def test_concurrent_commits_near_the_limit_one_passes(data_service):
    svc = data_service
    await _quota(svc, "vision", 100 * KiB)
    blobs = [{"x.bin": os.urandom(60 * KiB)} for _ in range(4)]
    for i, files in enumerate(blobs):  # everything uploaded first (for default): the commits race
        await svc.data.create("alice", f"vision/race{i}")
        r = await svc.call(
            "alice", "POST", "objects/pack", content=svc.data.pack_of(files.values()), params={"vc": "default"}
        )
        assert r.status_code == 200, r.text

    async def commit(i: int):
        body = {"parent": None, "files": svc.data.entries(blobs[i])}
        return await svc.call("alice", "POST", f"datasets/vision/race{i}/versions", json=body)

    answers = await asyncio.gather(*(commit(i) for i in range(4)))
    assert sorted(r.status_code for r in answers) == [201, 413, 413, 413], [r.text for r in answers]
    assert (await _storage(svc, "vision"))["store"] == 60 * KiB


async def test_deleting_versions_and_gc_free_the_quota(data_service):
    svc = data_service
    await _quota(svc, "vision", 100 * KiB)
    r = await _commit(svc, "alice", "vision/one", {"a.bin": os.urandom(60 * KiB)})
    assert r.status_code == 201, r.text
    r = await _commit(svc, "alice", "vision/two", {"b.bin": os.urandom(60 * KiB)})
    assert r.status_code == 413, r.text
    assert (await svc.call("alice", "DELETE", "datasets/vision/one/versions/1")).status_code == 204
    assert (await _storage(svc, "vision"))["store"] == 0  # freed at once, before any GC
    r = await _commit(svc, "alice", "vision/two", {"b.bin": os.urandom(60 * KiB)})
    assert r.status_code == 201, r.text
    assert (await svc.call("alice", "DELETE", "datasets/vision/two")).status_code == 204
    assert (await _storage(svc, "vision"))["store"] == 0
    # an upload for the VC that no commit names stays charged (the commit may follow) until GC
    blob = os.urandom(30 * KiB)
    r = await svc.call("alice", "POST", "objects/pack", content=svc.data.pack_of([blob]), params={"vc": "vision"})
    assert r.status_code == 200, r.text
    assert (await _storage(svc, "vision"))["store"] == 30 * KiB
    r = await svc.call("admin", "POST", "storage/gc")  # data_service: gc_grace 0
    assert r.status_code == 200, r.text
    assert (await _storage(svc, "vision"))["store"] == 0


async def test_storage_walk_counts_job_folders_and_shows_homes(service):
    from yitong_services.jobs.models import Job

    data_dir = Path(service.ctx.settings.data_dir).absolute()
    walk = service.app.state.storage_walk
    for _ in range(600):  # the walk the service started with is done (it would overwrite ours)
        if walk.last["finished"] is not None:
            break
        await asyncio.sleep(0.05)
    with service.ctx.db.writing() as s:
        job = Job(vc="vision", user="alice", name="writer", state="succeeded", spec={}, backend="local")
        s.add(job)
        s.flush()
        job_id = job.id
    outputs = data_dir / "jobs" / str(job_id) / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "model.bin").write_bytes(b"x" * 5000)
    os.link(outputs / "model.bin", outputs / "same.bin")  # one file, counted once
    (outputs / "elsewhere").symlink_to("/usr")  # a link counts as itself, never followed
    home = data_dir / "home" / "alice"
    home.mkdir(parents=True, exist_ok=True)
    (home / "notes.txt").write_bytes(b"y" * 3000)
    result = await asyncio.to_thread(walk.walk)
    assert result["jobs"] >= 1 and result["homes"] >= 1
    storage = await _storage(service, "vision")
    assert storage["job_outputs"] == 5000 and storage["used"] == 5000 and storage["measured"]
    await _quota(service, "vision", 6000)
    await service.data.create("alice", "vision/more")
    r = await service.call(
        "alice", "POST", "objects/pack", content=service.data.pack_of([b"z" * 2000]), params={"vc": "vision"}
    )
    assert r.status_code == 413 and "4.88Ki in use" in r.json()["detail"], r.text
    page = (await service.call("admin", "GET", f"{PREFIX}console")).text
    assert 'id="storage-table"' in page and '<tr data-vc="vision"><td>vision</td><td>5.86Ki</td>' in page
    assert '<tr data-user="alice"><td>alice</td><td>2.93Ki</td><td>1</td></tr>' in page
    assert "Homes and job folders measured" in page
    lines = set((await service.call("admin", "GET", f"{PREFIX}metrics")).text.splitlines())
    assert {
        'yitong_vc_storage_used_bytes{part="job_outputs",vc="vision"} 5000.0',
        'yitong_vc_storage_used_bytes{part="store",vc="vision"} 0.0',
        'yitong_vc_storage_quota_bytes{vc="vision"} 6000.0',
        'yitong_home_bytes{user="alice"} 3000.0',
    } <= lines


def _yt(proc, who: str, *argv: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "YITONG_API_URL": proc.base,
        "JUPYTERHUB_API_TOKEN": proc.hub.tokens[who],
        "YITONG_VC": "",  # not a job: the dataset's VC is the one named
    }
    yt = Path(sys.executable).parent / "yt"
    return subprocess.run([str(yt), *argv], env=env, capture_output=True, text=True, timeout=120)


def test_yt_prints_the_refusal_and_shows_storage(proc, tmp_path):
    """``yt data commit`` and ``yt vc`` against a real service process."""
    r = proc.call("admin", "PATCH", "vcs/vision", json={"storage_quota": "512Ki"})
    assert r.status_code == 200, r.text
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    (small / "a.bin").write_bytes(os.urandom(600 * KiB))  # travels in a pack
    (large / "b.bin").write_bytes(os.urandom(2 * 2**20))  # travels as a resumable upload
    for folder, what in ((small, "this pack upload"), (large, "the upload of object")):
        done = _yt(proc, "alice", "data", "commit", str(folder), "vision/quota", "--no-cache")
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert "VC vision: storage quota 512Ki, 0 in use, " + what in done.stderr, done.stderr
    fits = tmp_path / "fits"
    fits.mkdir()
    (fits / "c.bin").write_bytes(os.urandom(100 * KiB))
    done = _yt(proc, "alice", "data", "commit", str(fits), "vision/quota", "--no-cache")
    assert done.returncode == 0, done.stderr
    shown = _yt(proc, "alice", "vc", "show", "vision")
    assert shown.returncode == 0, shown.stderr
    rows = [line.split() for line in shown.stdout.splitlines()]
    assert ["storage", "512", "KiB", "100", "KiB", "412", "KiB"] in rows, shown.stdout  # quota, used, free
    assert ["storage:", "store", "100", "KiB,", "job", "folders", "0", "B", "(not", "measured", "yet)"] in rows
    listed = _yt(proc, "alice", "vc", "ls")
    assert "storage" in listed.stdout and "512 KiB" in listed.stdout
    edited = _yt(proc, "admin", "vc", "edit", "vision", "--storage-quota", "none")
    assert edited.returncode == 0, edited.stderr
    assert proc.call("admin", "GET", "vcs/vision").json()["storage_quota"] is None


async def test_the_settings_file_seeds_a_storage_quota(service_factory):
    from tests.services.conftest import SETTINGS

    vcs = {**SETTINGS["vcs"], "vision": {**SETTINGS["vcs"]["vision"], "storage_quota": "2Gi"}}
    async with service_factory(vcs=vcs) as svc:
        assert (await _storage(svc, "vision"))["quota"] == 2 * 2**30
        assert (await _storage(svc, "nlp"))["quota"] is None
