"""Dataset round trips on a local store and on an S3-compatible store.

The S3 leg runs against moto's S3 server (``moto.server.ThreadedMotoServer`` on a free port):
no object store can be installed on the test machines, and moto speaks the S3 protocol that
s3fs (and so the service) uses. Each round trip also runs on SQLite and PostgreSQL.
"""

import asyncio
import os
import stat
from pathlib import Path

import pytest
from blake3 import blake3

from yitong_services.datasets.materialize import remove_tree

V1 = {"train/a.bin": b"a" * 100, "train/b.bin": b"b" * 2000, "README.md": b"hello", "empty": b""}
BIG = os.urandom(300_000)


def b3(data: bytes) -> str:
    return blake3(data).hexdigest()


async def _upload_large(svc, who: str, blob: bytes, piece: int = 100_000) -> None:
    h = b3(blob)
    r = await svc.call(who, "HEAD", f"objects/{h}/upload")
    assert r.status_code == 200 and r.headers["Upload-Offset"] == "0"
    offset = 0
    while offset < len(blob):
        headers = {"Upload-Offset": str(offset), "Upload-Length": str(len(blob))}
        r = await svc.call(who, "PATCH", f"objects/{h}/upload", content=blob[offset : offset + piece], headers=headers)
        assert r.status_code == 200, r.text
        offset = r.json()["offset"]
    assert r.json()["complete"] is True
    r = await svc.call(who, "HEAD", f"objects/{h}/upload")
    assert r.headers["Upload-Complete"] == "1"


async def test_round_trip(data_service, store_kind):
    svc, data = data_service, data_service.data
    r = await data.push("alice", "vision/mnist", V1, "first")
    assert r.status_code == 201, r.text
    v1 = r.json()
    assert (v1["number"], v1["files"], v1["bytes"], v1["author"], v1["parent"]) == (1, 4, 2105, "alice", None)
    assert (
        v1["lineage"]
        == {"parent": None, "job": None, "kind": None, "model": None, "model_manifest": None, "inputs": []}
        and v1["unchanged"] is False
    )

    # no-op commit: unchanged, same version
    r = await data.push("alice", "vision/mnist", V1)
    assert r.status_code == 200 and r.json()["unchanged"] is True and r.json()["number"] == 1

    # v2: one file changed, one removed, one added, one large object through resumable upload
    await _upload_large(svc, "erin", BIG)
    v2_files = {k: v for k, v in V1.items() if k != "README.md"} | {"train/a.bin": b"A" * 150, "new/c.bin": b"c"}
    await data.upload("erin", v2_files.values())
    body = {"message": "second", "parent": 1, "files": data.entries(v2_files) + data.entries({"big/blob": BIG})}
    r = await svc.call("erin", "POST", "datasets/vision/mnist/versions", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["parent"] == 1 and r.json()["author"] == "erin"

    # stale parent
    r = await svc.call("alice", "POST", "datasets/vision/mnist/versions", json=body | {"parent": 1})
    assert r.status_code == 409 and "parent 1 is not the latest version (the latest is version 2)" in r.json()["detail"]

    r = await svc.call("alice", "GET", "datasets/vision/mnist/versions")
    assert [v["number"] for v in r.json()] == [2, 1]
    assert (await svc.call(None, "GET", "/services/yitong/metrics")).status_code == 401
    assert (await svc.call("alice", "GET", "/services/yitong/metrics")).status_code == 403
    metrics = (await svc.call("admin", "GET", "/services/yitong/metrics")).text
    assert 'yitong_datasets{vc="vision"} 1.0' in metrics and 'yitong_dataset_versions{vc="vision"} 2.0' in metrics
    assert f'yitong_store_bytes{{kind="loose"}} {float(len(BIG))}' in metrics
    r = await svc.call("alice", "GET", "datasets/vision/mnist/diff?from=1&to=2")
    assert r.json() == {
        "added": [{"path": "big/blob", "size": len(BIG)}, {"path": "new/c.bin", "size": 1}],
        "removed": [{"path": "README.md", "size": 5}],
        "changed": [{"path": "train/a.bin", "old_size": 100, "size": 150}],
    }
    assert (await svc.call("alice", "GET", "datasets/vision/mnist/diff")).json()["removed"][0]["path"] == "README.md"

    # tags and refs
    r = await svc.call("alice", "PUT", "datasets/vision/mnist/tags/stable", json={"version": 1})
    assert r.status_code == 200 and r.json()["tags"] == ["stable"]
    for ref in ("1", "v1", "stable"):
        assert (await svc.call("alice", "GET", f"datasets/vision/mnist/versions/{ref}")).json()["number"] == 1
    d = (await svc.call("alice", "GET", "datasets/vision/mnist")).json()
    assert (d["versions"], d["latest"], d["tags"]) == (2, 2, {"stable": 1})

    # download: manifest, objects (packed, loose, ranges), fetch as a pack stream
    manifest = (await svc.call("alice", "GET", "datasets/vision/mnist/versions/latest/manifest")).json()
    assert [f["path"] for f in manifest["files"]] == sorted(f["path"] for f in body["files"])
    for path, blob in [("train/b.bin", V1["train/b.bin"]), ("big/blob", BIG)]:
        r = await svc.call("bob", "GET", f"datasets/vision/mnist/versions/2/objects/{b3(blob)}")
        assert r.status_code == 404  # bob is not in VC vision
        r = await svc.call("frank", "GET", f"datasets/vision/mnist/versions/2/objects/{b3(blob)}")
        assert r.status_code == 200 and r.content == blob, path
        r = await svc.call(
            "frank", "GET", f"datasets/vision/mnist/versions/2/objects/{b3(blob)}", headers={"Range": "bytes=10-19"}
        )
        assert r.status_code == 206 and r.content == blob[10:20]
        assert r.headers["Content-Range"] == f"bytes 10-19/{len(blob)}"
    r = await svc.call("alice", "GET", f"datasets/vision/mnist/versions/2/objects/{b3(V1['README.md'])}")
    assert r.status_code == 404 and "is not in version 2 of dataset vision/mnist" in r.json()["detail"]
    wanted = [b3(BIG), b3(V1["train/b.bin"]), b3(b"")]
    r = await svc.call("alice", "POST", "datasets/vision/mnist/versions/2/fetch", json={"hashes": wanted})
    assert r.status_code == 200
    assert sorted(_records(r.content)) == sorted([BIG, V1["train/b.bin"], b""])

    # materialise: a read-only tree, hardlinked from the cache, built once
    r = await svc.call("erin", "POST", "datasets/vision/mnist/versions/2/materialize")
    assert r.status_code == 200, r.text
    tree = r.json()["path"]
    assert open(os.path.join(tree, "big/blob"), "rb").read() == BIG
    assert stat.S_IMODE(os.stat(os.path.join(tree, "train/a.bin")).st_mode) == 0o444
    assert stat.S_IMODE(os.stat(os.path.join(tree, "train")).st_mode) == 0o555
    assert os.stat(os.path.join(tree, "big/blob")).st_nlink == 2  # cache + tree
    assert (await svc.call("erin", "POST", "datasets/vision/mnist/versions/2/materialize")).json()["path"] == tree

    # delete: refused while referenced, then GC reclaims, verify stays clean
    await _reference(svc, "vision", "mnist", 1, "job", "42")
    r = await svc.call("alice", "DELETE", "datasets/vision/mnist/versions/1")
    assert r.status_code == 409 and r.json()["detail"] == "dataset vision/mnist: version 1 is used by job 42"
    r = await svc.call("alice", "DELETE", "datasets/vision/mnist")
    assert r.status_code == 409
    await _unreference(svc)
    assert (await svc.call("alice", "DELETE", "datasets/vision/mnist/versions/stable")).status_code == 204
    r = await svc.call("admin", "POST", "storage/gc")
    assert r.status_code == 200, r.text
    assert r.json()["objects"] == 2 and r.json()["bytes"] == 105  # README.md and the old train/a.bin
    assert (await svc.call("admin", "POST", "storage/verify")).json() == {
        "checked": 6,
        "corrupt": [],
        "missing": [],
        "cache_corrupt": [],
    }
    assert (await svc.call("frank", "GET", f"datasets/vision/mnist/versions/2/objects/{b3(BIG)}")).content == BIG

    assert (await svc.call("alice", "DELETE", "datasets/vision/mnist")).status_code == 204
    r = await svc.call("admin", "POST", "storage/gc")
    assert r.json()["objects"] == 5 and r.json()["manifests"] == 1
    assert os.path.exists(tree) is False
    assert (await svc.call("admin", "POST", "storage/verify")).json() == {
        "checked": 0,
        "corrupt": [],
        "missing": [],
        "cache_corrupt": [],
    }
    keys = [k for k, _, _ in svc.ctx.storage.store.listing("")]
    assert keys == [], keys


def _records(stream: bytes) -> list[bytes]:
    out, i = [], 0
    while i < len(stream):
        size = int.from_bytes(stream[i + 32 : i + 40], "big")
        blob = stream[i + 40 : i + 40 + size]
        assert b3(blob) == stream[i : i + 32].hex()
        out.append(blob)
        i += 40 + size
    return out


async def _reference(svc, vc, name, number, kind, ref):
    from sqlalchemy import select

    from yitong_services.datasets.models import Dataset, DatasetRef, DatasetVersion

    with svc.ctx.db.session() as s, s.begin():
        d = s.scalar(select(Dataset).where(Dataset.vc == vc, Dataset.name == name))
        v = s.scalar(select(DatasetVersion).where(DatasetVersion.dataset_id == d.id, DatasetVersion.number == number))
        s.add(DatasetRef(version_id=v.id, kind=kind, ref=ref))


async def _unreference(svc):
    from sqlalchemy import delete

    from yitong_services.datasets.models import DatasetRef

    with svc.ctx.db.session() as s, s.begin():
        s.execute(delete(DatasetRef))


async def test_dedup_across_datasets_and_bad_packs(data_service):
    svc, data = data_service, data_service.data
    assert (await data.push("alice", "vision/one", V1)).status_code == 201
    hashes = [b3(b) for b in V1.values()]
    r = await svc.call("erin", "POST", "objects/missing", json={"hashes": hashes})
    assert r.json() == {"missing": []}  # a member of vision reads them: no upload
    r = await svc.call("bob", "POST", "objects/missing", json={"hashes": hashes})
    assert sorted(r.json()["missing"]) == sorted(hashes)  # bob (nlp) must send the bytes himself
    assert (await data.push("bob", "nlp/two", V1)).status_code == 201
    # the store keeps one copy; the answer counts what bob sent, whether it was stored before or not
    assert (await svc.call("bob", "POST", "objects/pack", content=data.pack_of(V1.values()))).json()["stored"] == len(
        V1
    )
    assert len(list(svc.ctx.storage.store.listing("packs/"))) == 1

    good, bad = b"good" * 10, b"bad" * 10
    corrupt = data.pack_of([good]) + bytes.fromhex(b3(b"other")) + len(bad).to_bytes(8, "big") + bad
    r = await svc.call("bob", "POST", "objects/pack", content=corrupt)
    assert r.status_code == 422 and b3(b"other") in r.json()["detail"]
    assert (await svc.call("bob", "POST", "objects/missing", json={"hashes": [b3(good)]})).json()["missing"] == [
        b3(good)
    ]
    r = await svc.call("bob", "POST", "objects/pack", content=data.pack_of([good])[:-3])
    assert r.status_code == 422 and "the pack ends inside object" in r.json()["detail"]
    assert not [k for k, _, _ in svc.ctx.storage.store.listing("packs/") if ".tmp-" in k]

    # a commit naming objects that were never uploaded
    r = await svc.call(
        "bob", "POST", "datasets/nlp/two/versions", json={"parent": 1, "files": data.entries({"x": b"never uploaded"})}
    )
    assert r.status_code == 422 and "1 objects are not in the store (upload them first)" in r.json()["detail"]
    # the size in the manifest must match the object
    r = await svc.call(
        "bob",
        "POST",
        "datasets/nlp/two/versions",
        json={"parent": 1, "files": [{"path": "x", "size": 3, "hash": b3(V1["README.md"])}]},
    )
    assert r.status_code == 422 and "says 3 bytes but object" in r.json()["detail"]


async def test_resumable_upload_resumes_and_checks(data_service):
    svc = data_service
    blob = os.urandom(50_000)
    h = b3(blob)
    headers = {"Upload-Offset": "0", "Upload-Length": str(len(blob))}
    r = await svc.call("alice", "PATCH", f"objects/{h}/upload", content=blob[:20_000], headers=headers)
    assert r.json() == {"offset": 20_000, "complete": False}
    assert (await svc.call("alice", "HEAD", f"objects/{h}/upload")).headers["Upload-Offset"] == "20000"
    r = await svc.call(
        "alice", "PATCH", f"objects/{h}/upload", content=blob[10_000:], headers=headers | {"Upload-Offset": "10000"}
    )
    assert r.status_code == 409 and "resume at Upload-Offset: 20000" in r.json()["detail"]
    r = await svc.call(
        "alice",
        "PATCH",
        f"objects/{h}/upload",
        content=blob[20_000:] + b"extra",
        headers=headers | {"Upload-Offset": "20000"},
    )
    assert r.status_code == 422 and "runs past Upload-Length" in r.json()["detail"]
    r = await svc.call(
        "alice", "PATCH", f"objects/{h}/upload", content=blob[20_000:], headers=headers | {"Upload-Offset": "20000"}
    )
    assert r.json() == {"offset": 50_000, "complete": True}

    wrong = b3(b"something else")
    r = await svc.call(
        "alice",
        "PATCH",
        f"objects/{wrong}/upload",
        content=blob[:100],
        headers={"Upload-Offset": "0", "Upload-Length": "100"},
    )
    assert r.status_code == 422 and "the partial upload was dropped" in r.json()["detail"]
    assert (await svc.call("alice", "HEAD", f"objects/{wrong}/upload")).headers["Upload-Offset"] == "0"


@pytest.mark.parametrize("store_kind", ["local"], indirect=True)
async def test_verify_reports_corruption_and_loss(data_service):
    svc, data = data_service, data_service.data
    assert (await data.push("alice", "vision/v", V1)).status_code == 201
    await _upload_large(svc, "alice", BIG)
    r = await svc.call(
        "alice", "POST", "datasets/vision/v/versions", json={"parent": 1, "files": data.entries(V1 | {"big": BIG})}
    )
    assert r.status_code == 201
    store = svc.ctx.storage.store
    pack = next(k for k, _, _ in store.listing("packs/"))
    path = store.path(pack)
    raw = bytearray(open(path, "rb").read())
    raw[45] ^= 0xFF  # the first record's bytes
    open(path, "wb").write(bytes(raw))
    os.unlink(store.path(f"objects/{b3(BIG)[:2]}/{b3(BIG)}"))
    report = (await svc.call("admin", "POST", "storage/verify")).json()
    assert report["missing"] == [b3(BIG)]
    assert len(report["corrupt"]) == 1 and report["corrupt"][0] in {b3(b) for b in V1.values()}


async def test_commit_by_changes_to_the_parent(data_service):
    """A commit may send only what changed (``base``/``put``/``delete``): the version equals the one
    the whole manifest gives; a stale base, a bad entry or a wrong expected hash is refused."""
    svc, data = data_service, data_service.data
    from yitong_services.datasets.manifest import canonical, manifest_hash

    assert (await data.push("alice", "vision/delta", V1, "v1")).status_code == 201
    v1 = (await svc.call("alice", "GET", "datasets/vision/delta/versions/1")).json()
    v2_files = {k: v for k, v in V1.items() if k != "README.md"} | {"train/a.bin": b"changed", "new/c.bin": b"c"}
    await data.upload("alice", v2_files.values())
    expected = manifest_hash(canonical(data.entries(v2_files)))
    put = data.entries({"train/a.bin": b"changed", "new/c.bin": b"c"})
    body = {
        "message": "v2",
        "parent": 1,
        "base": v1["manifest"],
        "put": put,
        "delete": ["README.md"],
        "manifest": expected,
    }

    for change, status, says in [
        ({"base": "0" * 64}, 409, "the changes are relative to parent 1"),
        ({"parent": None}, 409, "the changes are relative to parent None"),
        ({"delete": ["nope"]}, 422, "delete names 'nope', which the parent does not have"),
        ({"put": put + put[:1]}, 422, "path 'train/a.bin' appears twice"),
        ({"put": data.entries({"README.md": b"back"})}, 422, "'README.md' is both put and deleted"),
        ({"put": put + data.entries({"train/a.bin/x": b"c"})}, 422, "is both a file and a directory"),
        ({"put": data.entries({"../up": b"c"})}, 422, "leaves the dataset root"),
        ({"manifest": "1" * 64}, 422, "as the client computed; commit the whole manifest"),
        ({"files": put}, 422, "send either files"),
        ({"files": put, "base": None}, 422, "put and delete go with base"),
    ]:
        r = await svc.call("alice", "POST", "datasets/vision/delta/versions", json=body | change)
        assert r.status_code == status and says in r.text, (change, r.text)
    r = await svc.call(
        "alice", "POST", "datasets/vision/delta/versions", json={k: v for k, v in body.items() if k != "base"}
    )
    assert r.status_code == 422 and "send either files" in r.text
    assert (await svc.call("alice", "GET", "datasets/vision/delta")).json()["versions"] == 1  # nothing committed

    r = await svc.call("alice", "POST", "datasets/vision/delta/versions", json=body)
    assert r.status_code == 201, r.text
    assert (r.json()["number"], r.json()["manifest"], r.json()["parent"]) == (2, expected, 1)
    files = (await svc.call("alice", "GET", "datasets/vision/delta/versions/2/manifest")).json()["files"]
    assert files == canonical(data.entries(v2_files))["files"]
    # objects the change names must be in the store like any other
    body3 = {"parent": 2, "base": expected, "put": data.entries({"x": b"never uploaded"}), "delete": []}
    r = await svc.call("alice", "POST", "datasets/vision/delta/versions", json=body3)
    assert r.status_code == 422 and "1 objects are not in the store" in r.text


@pytest.mark.parametrize("store_kind", ["local"], indirect=True)
async def test_concurrent_materialise_of_a_cold_version_builds_one_tree(data_service):
    """Jobs starting together on one input fill the cache and build its tree at the same time:
    every caller gets the tree. A filler that lost the race must not replace the winner's cached
    copy, since link(2) to a file whose last name a rename just took fails with ENOENT (seen as a
    trial that 'could not be started')."""
    svc = data_service
    files = {f"part/{i:03d}.bin": os.urandom(64) for i in range(100)}
    assert (await svc.data.push("alice", "vision/many", files)).status_code == 201
    for _round in range(8):
        for root in (svc.ctx.storage.cache_dir, svc.ctx.storage.materialize_dir):
            remove_tree(root)
        replies = await asyncio.gather(
            *(svc.call("erin", "POST", "datasets/vision/many/versions/1/materialize") for _ in range(8))
        )
        assert [r.status_code for r in replies] == [200] * 8, [r.text for r in replies]
        assert len({r.json()["path"] for r in replies}) == 1
        tree = Path(replies[0].json()["path"])
        assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.bin")) == sorted(files)
