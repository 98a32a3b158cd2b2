"""The datasets SDK against the stand-in platform API (a real HTTP server; datasets_standin.py):
commit, no-op, pull of only what changed, diff, tags, delete refusals, open, and transfers that
resume after a dropped connection."""

import os
import shutil
import time

import pytest
from blake3 import blake3

from yitong_lab.client import YitongError
from yitong_lab.datasets import Datasets, transfer

BIG = (1 << 20) + 300_000  # above the pack threshold: goes up with the resumable PATCH


def make_tree(root, files):
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def data(tmp_path):
    return make_tree(
        tmp_path / "imgs",
        {
            "a.txt": b"alpha",
            "train/0001.png": os.urandom(4096),
            "train/0002.png": os.urandom(4096),
            "empty": b"",
            "dup1": b"same",
            "dup2": b"same",
            "big.bin": os.urandom(BIG),
        },
    )


def uploads(env):
    return [r for r in env.requests if r[1].split("?")[0].endswith(("/objects/pack", "/upload"))]


def test_commit_noop_and_pull(yt_env, data, tmp_path):
    ds = Datasets()
    v1 = ds.commit(data, "vision/mnist", "first", progress=None)
    first = tree(data)
    assert (v1["number"], v1["files"], v1["unchanged"], v1["parent"]) == (1, 7, False, None)
    assert v1["uploaded"]["objects"] == 6  # dup1 and dup2 are one object
    assert set(yt_env.datasets.objects) == {blake3(b).hexdigest() for b in tree(data).values()}
    assert ds.get("vision/mnist")["versions"] == 1

    before = len(yt_env.requests)
    again = ds.commit(data, "vision/mnist", "again", progress=None)
    assert (again["number"], again["unchanged"]) == (1, True)
    sent = [r[:2] for r in yt_env.requests[before:]]
    assert sent == [
        ("GET", "/services/yitong/api/v1/datasets/vision/mnist"),  # nothing uploaded
        ("GET", "/services/yitong/api/v1/datasets/vision/mnist/versions/1"),
    ]

    (data / "a.txt").write_bytes(b"alpha, corrected")
    (data / "train" / "0002.png").unlink()
    (data / "new.txt").write_bytes(b"new")
    before = len(yt_env.requests)
    v2 = ds.commit(data, "vision/mnist", "fixes", progress=None)
    assert (v2["number"], v2["parent"], v2["uploaded"]["objects"]) == (2, 1, 2)
    assert [r[1].split("/")[-1] for r in uploads(yt_env)[-1:]] == ["pack?vc=vision"]  # the VC the bytes are for
    assert ds.diff("vision/mnist@1", "@2") == {
        "from": "1",
        "to": "2",
        "added": [{"path": "new.txt", "size": 3}],
        "removed": [{"path": "train/0002.png", "size": 4096}],
        "changed": [{"path": "a.txt", "old_size": 5, "size": 16}],
    }
    assert ds.diff("vision/mnist@v2")["added"] == [{"path": "new.txt", "size": 3}]  # against its parent
    assert len(ds.diff("vision/mnist@1")["added"]) == 7  # the first version: everything

    out = tmp_path / "out"
    r = ds.pull("vision/mnist@1", out, progress=None)
    assert (r["number"], r["fetched"], r["unchanged"]) == (1, 7, 0)
    assert tree(out) == first
    (out / "extra").write_bytes(b"mine")
    r = ds.pull("vision/mnist", out, progress=None)
    assert (r["number"], r["fetched"], r["unchanged"], r["deleted"]) == (2, 2, 5, 0)
    assert tree(out) == {**tree(data), "extra": b"mine", "train/0002.png": first["train/0002.png"]}
    before = len(yt_env.requests)
    r = ds.pull("vision/mnist", out, delete=True, progress=None)
    assert (r["fetched"], r["deleted"]) == (0, 2)
    assert tree(out) == tree(data)
    assert not any("/fetch" in q[1] or "/objects/" in q[1] for q in yt_env.requests[before:])


def test_pull_fetches_only_changed_files(yt_env, data, tmp_path):
    ds = Datasets()
    ds.commit(data, "vision/mnist", "v1", progress=None)
    out = tmp_path / "out"
    ds.pull("vision/mnist", out, progress=None)
    (out / "train" / "0001.png").write_bytes(b"locally damaged")
    os.utime(out / "dup1", ns=(1, 1))  # same content, new mtime: re-hashed, not fetched
    before = len(yt_env.datasets.objects), len(yt_env.requests)
    r = ds.pull("vision/mnist", out, progress=None)
    assert (r["fetched"], r["bytes"]) == (1, 4096)
    fetched = [q for q in yt_env.requests[before[1] :] if q[1].endswith("/fetch")]
    assert len(fetched) == 1
    assert tree(out) == tree(data)


def test_pull_refuses_what_is_in_the_way(yt_env, tmp_path):
    ds = Datasets()
    ds.commit(make_tree(tmp_path / "d", {"x/y": b"1"}), "vision/mnist", "", progress=None)
    out = make_tree(tmp_path / "out", {"x": b"a file where the version has a directory"})
    with pytest.raises(YitongError, match="x is in the way of vision/mnist@1: move it or pull with --delete"):
        ds.pull("vision/mnist", out, progress=None)
    assert ds.pull("vision/mnist", out, delete=True, progress=None)["deleted"] == 1
    assert tree(out) == {"x/y": b"1"}


def test_commit_conflict_when_someone_committed_meanwhile(yt_env, data, monkeypatch):
    ds = Datasets()
    ds.commit(data, "vision/mnist", "v1", progress=None)
    (data / "a.txt").write_bytes(b"mine")
    real = transfer.Uploader.finish

    def upload_and_race(self, *args, **kwargs):  # someone else's commit lands while ours uploads
        result = real(self, *args, **kwargs)
        store = yt_env.datasets.datasets["vision/mnist"]
        store["versions"].append({**store["versions"][-1], "number": 2, "parent": 1, "manifest": "x"})
        store["next"] = 3
        return result

    monkeypatch.setattr(transfer.Uploader, "finish", upload_and_race)
    with pytest.raises(
        YitongError, match="someone committed to vision/mnist meanwhile .*parent was v1.*commit again"
    ) as info:
        ds.commit(data, "vision/mnist", "v2", progress=None)
    assert info.value.status == 409


def test_commit_uploads_while_it_still_hashes(yt_env, data, monkeypatch):
    """Hashed files go up in batches while later ones are hashed: the hasher of the last
    batch waits (here) until the service has seen an upload, which only overlap can give."""
    from yitong_lab.datasets import local

    monkeypatch.setattr(local, "SINK_FILES", 2)
    real, waited = local._hash_small_batch, []

    def hash_later_files_after_an_upload(root, files, keep):
        for file in files:
            if file[0] in ("train/0001.png", "train/0002.png"):  # the last small batch
                deadline = time.monotonic() + 20
                while not uploads(yt_env) and time.monotonic() < deadline:
                    time.sleep(0.01)
                waited.append(bool(uploads(yt_env)))
        return real(root, files, keep)

    monkeypatch.setattr(local, "_hash_small_batch", hash_later_files_after_an_upload)
    v1 = Datasets().commit(data, "vision/mnist", "pipelined", progress=None)
    assert waited == [True, True]
    asks = [r for r in yt_env.requests if r[1].endswith("/objects/missing")]
    assert len(asks) == 4  # three batches of small files, then the big one
    assert (v1["number"], v1["uploaded"]["objects"]) == (1, 6)
    assert set(yt_env.datasets.objects) == {blake3(b).hexdigest() for b in tree(data).values()}


def test_uploader_holds_bounded_bytes_in_hand(yt_env, tmp_path):
    """Bytes read while hashing wait in memory for their pack at most up to the bound: an offer
    past it waits until earlier packs are sent, and everything still arrives."""
    from yitong_lab.client import Client
    from yitong_lab.datasets.packs import Item
    from yitong_lab.datasets.progress import Progress

    blobs = [os.urandom(1000) + bytes([i]) for i in range(12)]
    items = [Item(blake3(b).hexdigest(), len(b), str(tmp_path / "gone"), b) for b in blobs]
    peak = []
    with transfer.Uploader(Client(), Progress(), held=2500) as uploader:
        for pair in (items[i : i + 2] for i in range(0, 12, 2)):
            uploader.offer(pair)
            peak.append(uploader._held)
        assert uploader.finish() == (12, sum(map(len, blobs)))
        assert uploader._held == 0
    assert max(peak) <= 2500
    assert {blake3(b).hexdigest() for b in blobs} <= set(yt_env.datasets.objects)


def test_a_failed_background_upload_fails_the_commit(yt_env, data, monkeypatch):
    def refuse(client, items, progress, vc=None):
        raise YitongError(507, "the store is full")

    monkeypatch.setattr(transfer, "upload_pack", refuse)
    with pytest.raises(YitongError, match="the store is full"):
        Datasets().commit(data, "vision/mnist", "v1", progress=None)
    assert not [r for r in yt_env.requests if r[0] == "POST" and r[1].endswith("/versions")]


def test_tags_open_delete(yt_env, data, monkeypatch):
    ds = Datasets()
    ds.commit(data, "vision/mnist", "v1", progress=None)
    assert ds.tag("vision/mnist@1", "best")["tags"] == ["best"]
    assert ds.version("vision/mnist@best")["number"] == 1
    path = ds.open("vision/mnist@best")
    assert tree(__import__("pathlib").Path(path)) == tree(data)
    ds.untag("vision/mnist", "best")
    with pytest.raises(YitongError, match="no version best"):
        ds.version("vision/mnist@best")
    yt_env.datasets.refs[("vision/mnist", 1)] = "job 42"
    with pytest.raises(YitongError, match="vision/mnist v1 is used by job 42") as info:
        ds.delete("vision/mnist@1")
    assert info.value.status == 409
    with pytest.raises(YitongError, match="is used by job 42"):
        ds.delete("vision/mnist")
    del yt_env.datasets.refs[("vision/mnist", 1)]
    ds.delete("vision/mnist@1")
    assert ds.versions("vision/mnist") == []
    ds.delete("vision/mnist")
    assert ds.list() == []


def test_private_datasets_and_names(yt_env, monkeypatch, tmp_path):
    ds = Datasets()
    ds.create("vision/secret", private=True, description="mine")
    assert [d["name"] for d in ds.list(vc="vision")] == ["secret"]
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "bob-token")
    with pytest.raises(YitongError, match="no dataset vision/secret") as info:
        Datasets().get("vision/secret")
    assert info.value.status == 404
    with pytest.raises(ValueError, match="VC/NAME"):
        ds.commit(tmp_path, "mnist", progress=None)


def test_upload_resumes_from_the_service_offset(yt_env, tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "PATCH_BLOCK", 1 << 20)
    payload = os.urandom(3 * (1 << 20) + 12345)
    data = make_tree(tmp_path / "d", {"big.bin": payload})
    yt_env.datasets.drop_patch_after = 700_000  # the first PATCH loses its connection mid-body
    v = Datasets().commit(data, "vision/big", "", progress=None)
    digest = blake3(payload).hexdigest()
    assert yt_env.datasets.objects[digest] == payload and v["files"] == 1
    offsets = [o for h, o in yt_env.datasets.patches if h == digest]
    assert offsets[:2] == [0, 700_000]  # asked HEAD after the drop, resumed at the service's offset
    assert offsets == [0, 700_000, 700_000 + (1 << 20), 700_000 + 2 * (1 << 20)]


def test_upload_resumes_a_partial_left_by_an_earlier_run(yt_env, tmp_path):
    payload = os.urandom(BIG)
    digest = blake3(payload).hexdigest()
    yt_env.datasets.partials[digest] = bytearray(payload[:500_000])  # a killed client's leftovers
    Datasets().commit(make_tree(tmp_path / "d", {"big": payload}), "vision/big", "", progress=None)
    assert yt_env.datasets.objects[digest] == payload
    assert [o for h, o in yt_env.datasets.patches if h == digest] == [500_000]


def test_download_resumes_with_range(yt_env, tmp_path):
    payload = os.urandom(BIG)
    Datasets().commit(make_tree(tmp_path / "d", {"big": payload}), "vision/big", "", progress=None)
    yt_env.datasets.drop_get_after = 400_000
    Datasets().pull("vision/big", tmp_path / "out", progress=None)
    assert (tmp_path / "out" / "big").read_bytes() == payload
    gets = [q for q in yt_env.requests if "/objects/" in q[1] and q[0] == "GET"]
    assert len(gets) == 2
    assert not [p for p in (tmp_path / "out").iterdir() if ".yt-" in p.name]  # no partial left


def test_progress_reports_bytes(yt_env, data):
    events = []
    Datasets().commit(data, "vision/mnist", "", progress=lambda *e: events.append(e))
    phases = {}
    for phase, done, total in events:
        phases[phase] = (done, total)
    assert phases["hash"][0] == phases["hash"][1] == sum(len(b) for b in tree(data).values())
    assert phases["upload"][0] == phases["upload"][1] > BIG


def test_stat_cache_makes_the_noop_commit_stat_only(yt_env, data, monkeypatch):
    from yitong_lab.datasets import local

    Datasets().commit(data, "vision/mnist", "", progress=None)
    shutil.copy(data / "a.txt", data / "copy.txt")
    read = []
    for name in ("hash_path", "_hash_small"):
        real = getattr(local, name)
        monkeypatch.setattr(local, name, lambda p, *a, real=real: read.append(os.path.basename(p)) or real(p, *a))
    batch = local._hash_small_batch  # small files are read in batches, one loop each
    monkeypatch.setattr(
        local,
        "_hash_small_batch",
        lambda r, files, keep: read.extend(os.path.basename(f[0]) for f in files) or batch(r, files, keep),
    )
    v = Datasets().commit(data, "vision/mnist", "", progress=None)
    assert read == ["copy.txt"] and v["number"] == 2 and v["uploaded"]["objects"] == 0
    assert Datasets().commit(data, "vision/mnist", "", progress=None)["unchanged"] and read == ["copy.txt"]


def test_commit_on_a_parent_from_here_sends_only_the_changes(yt_env, data, monkeypatch):
    ds = Datasets()
    ds.commit(data, "vision/changes", "first", progress=None)
    assert "files" in yt_env.datasets.commit_bodies[-1]  # nothing to build on yet: the whole manifest
    (data / "a.txt").write_bytes(b"alpha, corrected")
    (data / "train" / "0002.png").unlink()
    asked = []
    real = transfer.missing
    monkeypatch.setattr(transfer, "missing", lambda client, hashes: asked.append(list(hashes)) or real(client, hashes))
    v2 = ds.commit(data, "vision/changes", "second", progress=None)
    body = yt_env.datasets.commit_bodies[-1]
    assert "files" not in body and body["delete"] == ["train/0002.png"]
    assert [f["path"] for f in body["put"]] == ["a.txt"] and body["manifest"] == v2["manifest"]
    assert asked == [[blake3(b"alpha, corrected").hexdigest()]]  # only the changed object was looked up
    assert v2["files"] == 6 and v2["uploaded"]["objects"] == 1
    # without the cache (another machine) the whole manifest goes, and gives the same result
    (data / "new.txt").write_bytes(b"new")
    v3 = ds.commit(data, "vision/changes", "third", progress=None, stat_cache=False)
    assert "files" in yt_env.datasets.commit_bodies[-1] and v3["number"] == 3


def test_commit_never_follows_a_symlink(yt_env, tmp_path, capsys):
    """A link to a secret outside the dataset is refused by name; its bytes never leave here:
    not in a scan, not when a file is swapped for a link after the scan (O_NOFOLLOW)."""
    from yitong_lab.cli.grammar import run
    from yitong_lab.datasets.local import LinkRefused, hash_files, scan
    from yitong_lab.datasets.statcache import NoCache

    secret = tmp_path / "outside" / "service-token"
    secret.parent.mkdir()
    secret.write_bytes(b"hub secret " + os.urandom(32))
    data = make_tree(tmp_path / "d", {"ok.txt": b"fine", "sub/real.txt": b"real"})
    for link, target in (("sub/token", secret), ("linked-dir", secret.parent)):
        os.symlink(target, data / link)
        with pytest.raises(LinkRefused, match=f"^{link} is a symbolic link .*never follows links") as info:
            Datasets().commit(data, "vision/leak", progress=None)
        assert info.value.path == link
        assert run(["data", "commit", str(data), "vision/leak"]) == 2
        assert f"{link} is a symbolic link" in capsys.readouterr().err
        os.unlink(data / link)
    assert uploads(yt_env) == [] and yt_env.datasets.objects == {}

    files = scan(data)  # a regular file when scanned, a link when read
    os.unlink(data / "sub" / "real.txt")
    os.symlink(secret, data / "sub" / "real.txt")
    with pytest.raises(LinkRefused, match="real.txt is a symbolic link"):
        hash_files(str(data), files, NoCache())
    with pytest.raises(LinkRefused):
        Datasets().commit(data, "vision/leak", progress=None)
    assert secret.read_bytes() not in b"".join(yt_env.datasets.objects.values())


def test_pull_replaces_a_local_link_and_never_writes_through_it(yt_env, data, tmp_path):
    ds = Datasets()
    ds.commit(data, "vision/mnist", progress=None)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"do not overwrite")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / "a.txt")
    ds.pull("vision/mnist", out, progress=None)
    assert victim.read_bytes() == b"do not overwrite"
    assert not os.path.islink(out / "a.txt") and (out / "a.txt").read_bytes() == b"alpha"
