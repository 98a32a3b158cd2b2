"""Hostile uploads: path traversal in manifests and oversize bodies are refused with a clear 4xx,
and nothing is written (no version, no manifest, no pack, no partial upload)."""

import pytest
from blake3 import blake3

from yitong_services.core.settings import Settings


def b3(data: bytes) -> str:
    return blake3(data).hexdigest()


BAD_PATHS = [
    ("../etc/passwd", "path '../etc/passwd' leaves the dataset root"),
    ("a/../../b", "path 'a/../../b' leaves the dataset root"),
    ("..", "path '..' leaves the dataset root"),
    ("/etc/passwd", "path '/etc/passwd' is absolute"),
    ("C:/Windows/x", "path 'C:/Windows/x' is absolute"),
    ("a\\..\\b", "contains a backslash"),
    ("a\x00b", "contains a NUL or control character"),
    ("a\nb", "contains a NUL or control character"),
    ("./a", "has a '.' segment"),
    ("a//b", "has an empty segment"),
    ("a/", "has an empty segment"),
    ("", "is empty"),
    ("x/" * 2500 + "y", "is longer than 3072 bytes"),
    ("a/" * 1500 + "b", "is 1501 levels deep; a dataset path has at most 256"),
    ("d/" + "n" * 300, "has a name of 300 bytes ('nnnn"),
    ("d/" + "n" * 300, "a file or folder name is at most 255 bytes"),
]


async def _store_keys(svc) -> list[str]:
    return [k for k, _, _ in svc.ctx.storage.store.listing("")]


@pytest.mark.parametrize("path,detail", BAD_PATHS, ids=[repr(p)[:30] for p, _ in BAD_PATHS])
async def test_bad_paths_refused(service, path, detail):
    data = service.data
    await data.create("alice", "vision/evil")
    await data.upload("alice", [b"payload"])
    before = await _store_keys(service)
    files = [{"path": "ok.txt", "size": 7, "hash": b3(b"payload")}, {"path": path, "size": 7, "hash": b3(b"payload")}]
    r = await service.call("alice", "POST", "datasets/vision/evil/versions", json={"parent": None, "files": files})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("dataset vision/evil: ") and detail in r.json()["detail"]
    assert (await service.call("alice", "GET", "datasets/vision/evil")).json()["versions"] == 0
    assert await _store_keys(service) == before  # no manifest written


async def test_path_that_is_not_utf8_refused(service):
    await service.data.create("alice", "vision/evil")
    body = '{{"parent": null, "files": [{{"path": "a\\ud800", "size": 1, "hash": "{}"}}]}}'.format(b3(b"x"))
    r = await service.call(
        "alice", "POST", "datasets/vision/evil/versions", content=body, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 422 and r.json()["detail"] == "dataset vision/evil: path 'a\\ud800' is not valid UTF-8"


@pytest.mark.parametrize(
    "files,detail",
    [
        (["a", "a/b"], "path 'a' is both a file and a directory"),
        (["a", "a-x", "a/b"], "path 'a' is both a file and a directory"),
        (["a", "a"], "path 'a' appears twice"),
    ],
)
async def test_conflicting_paths_refused(service, files, detail):
    data = service.data
    await data.create("alice", "vision/evil")
    await data.upload("alice", [b"x"])
    body = {"parent": None, "files": [{"path": p, "size": 1, "hash": b3(b"x")} for p in files]}
    r = await service.call("alice", "POST", "datasets/vision/evil/versions", json=body)
    assert r.status_code == 422 and detail in r.json()["detail"]


async def test_oversize_refused_before_writing(service_factory):
    async with service_factory(storage={"max_upload_bytes": "1Ki"}) as svc:
        big = b"z" * 2000
        pack = svc.data.pack_of([big])
        r = await svc.call("alice", "POST", "objects/pack", content=pack)
        assert r.status_code == 413
        assert r.json()["detail"] == ("the pack upload of 1.99 KiB exceeds the 1 KiB limit (storage.max_upload_bytes)")

        async def chunked():  # no Content-Length: refused while streaming
            for i in range(0, len(pack), 256):
                yield pack[i : i + 256]

        r = await svc.call("alice", "POST", "objects/pack", content=chunked())
        assert r.status_code == 413, r.text
        assert "exceeds the 1 KiB limit" in r.json()["detail"]
        h = b3(big)
        r = await svc.call(
            "alice",
            "PATCH",
            f"objects/{h}/upload",
            content=big,
            headers={"Upload-Offset": "0", "Upload-Length": "2000"},
        )
        assert r.status_code == 413
        assert (
            r.json()["detail"] == f"upload of object {h} of 1.95 KiB exceeds the 1 KiB limit (storage.max_upload_bytes)"
        )
        assert [k for k, _, _ in svc.ctx.storage.store.listing("")] == []
        assert list(svc.ctx.storage.spool.directory.iterdir()) == []


async def test_default_limit_message(service):
    h = b3(b"huge")
    r = await service.call(
        "alice",
        "PATCH",
        f"objects/{h}/upload",
        content=b"",
        headers={"Upload-Offset": "0", "Upload-Length": str(120 * 2**30)},
    )
    assert r.status_code == 413
    assert r.json()["detail"] == f"upload of object {h} of 120 GiB exceeds the 100 GiB limit (storage.max_upload_bytes)"


def test_storage_settings():
    s = Settings.model_validate(
        {"data_dir": "/srv/yt", "storage": {"pack_threshold": "4Mi", "max_upload_bytes": "1Ti"}}
    )
    assert (s.storage.pack_threshold, s.storage.max_upload_bytes) == (4 * 2**20, 2**40)
    assert s.storage_url == "file:///srv/yt/store"
    assert (str(s.cache_dir), str(s.materialize_dir)) == ("/srv/yt/cache", "/srv/yt/materialized")
    with pytest.raises(ValueError, match="storage.bogus"):
        Settings.model_validate({"storage": {"bogus": 1}})
