"""A content hash is not a read key (issue 8, point 6), and verify sees changed bytes (point 3).

The store keeps one copy of each content for every VC, but an object is readable only through a
dataset the caller sees, or because the caller sent its bytes. Users: alice, erin (vision), bob
(nlp), carol (default only), admin. Every attack here uses nothing but a user's token and the
documented API, as a notebook or a job of that user would.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from blake3 import blake3
from sqlalchemy import delete, func, select

SECRET = b"vision's private labels: " + os.urandom(64)
OTHER = b"somebody else's bytes of the same length " + os.urandom(48)


def b3(data: bytes) -> str:
    return blake3(data).hexdigest()


def entries(files: dict[str, bytes]) -> list[dict]:
    return [{"path": p, "size": len(b), "hash": b3(b)} for p, b in files.items()]


async def _commit(svc, who: str, dataset: str, files: dict[str, bytes], visibility: str = "vc"):
    """Create ``dataset`` and commit ``files`` WITHOUT uploading anything (naming hashes only)."""
    await svc.data.create(who, dataset, visibility)
    latest = (await svc.call(who, "GET", f"datasets/{dataset}")).json()["latest"]
    return await svc.call(
        who, "POST", f"datasets/{dataset}/versions", json={"parent": latest, "message": "", "files": entries(files)}
    )


def _object_rows(svc) -> int:
    from yitong_services.datasets.models import StoredObject

    with svc.ctx.db.session() as s:
        return s.scalar(select(func.count()).select_from(StoredObject))


# (visibility of alice's vision/a, who names its hash, in which dataset of theirs, may they read it)
ATTACKS = [
    ("vc", "bob", "nlp/b", False),  # another VC
    ("vc", "carol", "default/c", False),  # another VC (no VC in common with vision)
    ("private", "bob", "nlp/b", False),
    ("private", "erin", "vision/e", False),  # same VC, but the dataset is alice's private one
    ("vc", "erin", "vision/e", True),  # a member of the VC dedups: no upload
    ("private", "alice", "vision/own", True),  # the owner
    ("private", "admin", "default/adm", True),  # admins read everything
]


@pytest.mark.parametrize("visibility,who,theirs,reads", ATTACKS, ids=[f"{v}-{w}" for v, w, _, _ in ATTACKS])
async def test_naming_a_hash_reads_nothing(service, visibility, who, theirs, reads):
    svc, h = service, b3(SECRET)
    assert (await svc.data.push("alice", "vision/a", {"labels.txt": SECRET}, visibility=visibility)).status_code == 201
    rows = _object_rows(svc)

    r = await svc.call(who, "POST", "objects/missing", json={"hashes": [h]})
    assert r.json() == {"missing": [] if reads else [h]}
    r = await svc.call(who, "HEAD", f"objects/{h}/upload")
    assert r.status_code == 200 and (r.headers.get("Upload-Complete") == "1") is reads
    r = await _commit(svc, who, theirs, {"stolen.txt": SECRET})
    assert r.status_code == (201 if reads else 422), r.text
    if reads:
        return
    assert r.json()["detail"] == f"dataset {theirs}: 1 objects are not in the store (upload them first): {h}"

    # nothing reads the bytes: not through their dataset (no version), not through alice's
    for method, path, body in [
        ("GET", f"datasets/{theirs}/versions/latest/objects/{h}", None),
        ("POST", f"datasets/{theirs}/versions/latest/fetch", {"hashes": [h]}),
        ("POST", f"datasets/{theirs}/versions/latest/materialize", None),
        ("GET", f"datasets/vision/a/versions/latest/objects/{h}", None),
        ("POST", "datasets/vision/a/versions/latest/fetch", {"hashes": [h]}),
        ("POST", "datasets/vision/a/versions/latest/materialize", None),
    ]:
        r = await svc.call(who, method, path, json=body)
        assert r.status_code == 404, (path, r.text)
        assert SECRET not in r.content

    # sending other bytes under that name is refused; sending the bytes is the way in, and the
    # store still keeps one copy
    r = await svc.call(
        who,
        "PATCH",
        f"objects/{h}/upload",
        content=OTHER[: len(SECRET)],
        headers={"Upload-Offset": "0", "Upload-Length": str(len(SECRET))},
    )
    assert r.status_code == 422 and "the partial upload was dropped" in r.json()["detail"]
    assert (await _commit(svc, who, theirs, {"stolen.txt": SECRET})).status_code == 422
    r = await svc.call(who, "POST", "objects/pack", content=svc.data.pack_of([SECRET]))
    assert r.json() == {"stored": 1, "bytes": len(SECRET)}
    assert (await _commit(svc, who, theirs, {"mine.txt": SECRET})).status_code == 201
    assert _object_rows(svc) == rows
    r = await svc.call(who, "GET", f"datasets/{theirs}/versions/latest/objects/{h}")
    assert r.content == SECRET  # they sent these bytes themselves


async def test_no_oracle_for_bytes_held_elsewhere(service):
    """Every answer to bob is the same for alice's object as for bytes nobody ever stored."""
    svc = service
    held, never = SECRET, OTHER[: len(SECRET)]
    assert (await svc.data.push("alice", "vision/a", {"labels.txt": held})).status_code == 201
    answers = {}
    for name, blob in (("held", held), ("never", never)):
        h = b3(blob)
        got = []
        r = await svc.call("bob", "POST", "objects/missing", json={"hashes": [h]})
        got.append((r.status_code, r.text.replace(h, "H")))
        r = await svc.call("bob", "HEAD", f"objects/{h}/upload")
        got.append((r.status_code, sorted((k, v) for k, v in r.headers.items() if k.lower().startswith("upload-"))))
        r = await _commit(svc, "bob", f"nlp/{name}", {"x": blob})
        got.append((r.status_code, r.text.replace(h, "H").replace(name, "N")))
        r = await svc.call(
            "bob",
            "PATCH",
            f"objects/{h}/upload",
            content=b"x" * len(blob),
            headers={"Upload-Offset": "0", "Upload-Length": str(len(blob))},
        )
        got.append((r.status_code, r.text.replace(h, "H")))
        r = await svc.call("bob", "POST", "objects/pack", content=svc.data.pack_of([blob]))
        got.append((r.status_code, r.text))
        answers[name] = got
    assert answers["held"] == answers["never"]


async def test_partial_uploads_are_per_person(service):
    """alice's upload in progress neither shows in bob's HEAD nor blocks or feeds his upload."""
    svc = service
    blob = os.urandom(50_000)
    h = b3(blob)
    length = {"Upload-Length": str(len(blob))}
    r = await svc.call(
        "alice", "PATCH", f"objects/{h}/upload", content=blob[:20_000], headers=length | {"Upload-Offset": "0"}
    )
    assert r.json() == {"offset": 20_000, "complete": False}
    assert (await svc.call("bob", "HEAD", f"objects/{h}/upload")).headers["Upload-Offset"] == "0"
    r = await svc.call(
        "bob", "PATCH", f"objects/{h}/upload", content=blob[:10_000], headers=length | {"Upload-Offset": "0"}
    )
    assert r.json() == {"offset": 10_000, "complete": False}
    r = await svc.call(
        "alice", "PATCH", f"objects/{h}/upload", content=blob[20_000:], headers=length | {"Upload-Offset": "20000"}
    )
    assert r.json() == {"offset": 50_000, "complete": True}
    r = await svc.call("bob", "HEAD", f"objects/{h}/upload")  # stored now, but not bob's to read
    assert "Upload-Complete" not in r.headers and r.headers["Upload-Offset"] == "10000"
    r = await svc.call(
        "bob", "PATCH", f"objects/{h}/upload", content=blob[10_000:], headers=length | {"Upload-Offset": "10000"}
    )
    assert r.json() == {"offset": 50_000, "complete": True}
    assert (await svc.call("bob", "HEAD", f"objects/{h}/upload")).headers["Upload-Complete"] == "1"
    assert [k for k, _, _ in svc.ctx.storage.store.listing("objects/")] == [f"objects/{h[:2]}/{h}"]


async def test_grants_follow_the_dataset(service):
    """Visibility changes and deletion change who reads the objects; GC forgets the grants."""
    from yitong_services.datasets.models import ObjectDataset, ObjectUpload

    svc, h = service, b3(SECRET)

    async def erin_misses() -> bool:
        return (await svc.call("erin", "POST", "objects/missing", json={"hashes": [h]})).json()["missing"] == [h]

    assert (await svc.data.push("alice", "vision/p", {"s": SECRET}, visibility="private")).status_code == 201
    assert await erin_misses()
    assert (await svc.call("alice", "PATCH", "datasets/vision/p", json={"visibility": "vc"})).status_code == 200
    assert not await erin_misses()
    assert (await svc.call("alice", "PATCH", "datasets/vision/p", json={"visibility": "private"})).status_code == 200
    assert await erin_misses()
    assert (await svc.call("alice", "PATCH", "datasets/vision/p", json={"visibility": "vc"})).status_code == 200
    assert (await svc.call("alice", "DELETE", "datasets/vision/p")).status_code == 204
    assert await erin_misses()
    assert (await svc.call("admin", "POST", "storage/gc?grace=0")).json()["objects"] == 1
    with svc.ctx.db.session() as s:
        assert s.scalar(select(func.count()).select_from(ObjectDataset)) == 0
        assert s.scalar(select(func.count()).select_from(ObjectUpload)) == 0


async def test_versions_from_before_grants_are_backfilled(service):
    """Versions committed before migration 0005 grant their datasets when the service starts."""
    from yitong_services.datasets.models import ObjectDataset
    from yitong_services.datasets.objaccess import backfill

    svc, h = service, b3(SECRET)
    assert (await svc.data.push("alice", "vision/old", {"s": SECRET})).status_code == 201
    with svc.ctx.db.session() as s, s.begin():
        s.execute(delete(ObjectDataset))
    assert (await svc.call("erin", "POST", "objects/missing", json={"hashes": [h]})).json()["missing"] == [h]
    assert backfill(svc.ctx.storage) == 1
    assert (await svc.call("erin", "POST", "objects/missing", json={"hashes": [h]})).json()["missing"] == []
    assert backfill(svc.ctx.storage) == 0


def _flip(path: str, at: int = 0) -> None:
    """Change one byte in place (same size, same inode), as a writer with access would."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    os.chmod(path, mode | stat.S_IWUSR)
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.chmod(path, mode)


def _service_cli_verify(db_url: str, data_dir: Path) -> tuple[int, dict]:
    """``yitong-service verify --json`` on the same database and data directory (a subprocess)."""
    settings = data_dir.parent / "verify-settings.json"  # JSON is YAML
    settings.write_text(json.dumps({"database": {"url": db_url}}))
    argv = [
        str(Path(sys.executable).parent / "yitong-service"),
        "verify",
        "--json",
        "--settings",
        str(settings),
        "--data-dir",
        str(data_dir),
    ]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("where", ["loose", "pack", "cache"])
async def test_verify_reports_bytes_changed_in_place(service, where, db_url, tmp_path):
    svc = service
    small, large = b"small object " * 10, os.urandom(300_000)
    assert (await svc.data.push("alice", "vision/v", {"small": small})).status_code == 201
    h = b3(large)
    r = await svc.call(
        "alice",
        "PATCH",
        f"objects/{h}/upload",
        content=large,
        headers={"Upload-Offset": "0", "Upload-Length": str(len(large))},
    )
    assert r.json()["complete"]
    r = await svc.call(
        "alice",
        "POST",
        "datasets/vision/v/versions",
        json={"parent": 1, "files": entries({"small": small, "large": large})},
    )
    assert r.status_code == 201, r.text
    r = await svc.call("alice", "POST", "datasets/vision/v/versions/2/materialize")
    assert r.status_code == 200, r.text
    clean = (await svc.call("admin", "POST", "storage/verify")).json()
    assert (clean["corrupt"], clean["missing"], clean["cache_corrupt"]) == ([], [], [])

    storage = svc.ctx.storage
    if where == "loose":
        _flip(storage.store.path(f"objects/{h[:2]}/{h}"), 1000)
        changed = h
    elif where == "pack":
        pack = next(k for k, _, _ in storage.store.listing("packs/"))
        _flip(storage.store.path(pack), 40 + 3)  # inside the first record's bytes
        changed = b3(small)
    else:
        _flip(str(storage.cache_dir / "objects" / h[:2] / h), 5)
        changed = h
    report = (await svc.call("admin", "POST", "storage/verify")).json()
    if where == "cache":
        assert (report["corrupt"], report["cache_corrupt"]) == ([], [changed])
    else:
        assert (report["corrupt"], report["cache_corrupt"]) == ([changed], [])
    assert report["missing"] == []
    assert _service_cli_verify(db_url, tmp_path / "data") == (1, report)
