"""Datasets, the pure parts: the manifest's canonical form and hash (the contract's exact bytes),
path rules, refs, diffs, the pack record format, pack planning, the stat cache, text builders."""

import json
import os

import pytest
from blake3 import blake3

from yitong_lab.cli import data_tables as text
from yitong_lab.datasets.manifest import (
    Ref,
    canonical,
    check_path,
    commit_body,
    diff,
    manifest_bytes,
    manifest_hash,
    parse_ref,
)
from yitong_lab.datasets.packs import HEADER, Item, PackDecoder, body_length, decode, encode, header, pack_body
from yitong_lab.datasets.statcache import NoCache, Stat, StatCache
from yitong_lab.datasets.transfer import plan_packs

H1, H2 = "1" * 64, "ab" * 32


def test_manifest_hash_is_the_contracts_exact_bytes():
    files = [
        {"path": "train/é 1.png", "size": 4096, "hash": H2, "mode": 0o644},
        {"path": "README", "size": 0, "hash": H1},
    ]
    manifest = canonical(files)
    expected = (
        '{"files":[{"hash":"' + H1 + '","path":"README","size":0},'
        '{"hash":"' + H2 + '","path":"train/é 1.png","size":4096}]}'
    ).encode("utf-8")
    assert manifest_bytes(manifest) == expected
    assert manifest_hash(manifest) == blake3(expected).hexdigest()
    assert manifest_hash({"files": []}) == blake3(b'{"files":[]}').hexdigest()


def test_manifest_bytes_equal_the_generic_encoder():
    names = ['say "hi".txt', "é/名 1.png", "\U0001f600", "\u2028 line sep", "\uffff", "plain", "a'b"]
    manifest = canonical({"path": n, "size": i * 1000, "hash": H2} for i, n in enumerate(names))
    generic = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert manifest_bytes(manifest) == generic


@pytest.mark.parametrize("fields", [{}, {"message": 'fix "labels" é', "parent": None}, {"message": "", "parent": 7}])
def test_commit_body_splices_the_manifest_bytes(fields):
    manifest = canonical([{"path": "é/1", "size": 3, "hash": H1}, {"path": "a", "size": 0, "hash": H2}])
    body = commit_body(fields, manifest_bytes(manifest))
    assert json.loads(body) == {**fields, "files": manifest["files"]}
    with pytest.raises(ValueError, match="canonical bytes"):
        commit_body(fields, b'{"other":[]}')


def test_canonical_sorts_by_utf8_bytes():
    names = ["b", "a/z", "a-b", "Z", "é", "\U0001f600", "\uffff", "a0"]
    ordered = [f["path"] for f in canonical({"path": n, "size": 1, "hash": H1} for n in names)["files"]]
    assert ordered == sorted(names, key=lambda p: p.encode("utf-8"))
    assert ordered == ["Z", "a-b", "a/z", "a0", "b", "é", "\uffff", "\U0001f600"]


@pytest.mark.parametrize(
    "path", ["a", "a/b.txt", "dir/sub/ü 名.png", ".hidden", "a..b", "..a", "/".join(["x" * 200] * 15)]
)
def test_good_paths(path):
    assert check_path(path) == path


@pytest.mark.parametrize(
    "path, why",
    [
        ("", "non-empty"),
        ("/etc/passwd", "relative"),
        ("../up", "'..'"),
        ("a/../b", "'..'"),
        ("a/./b", "'.'"),
        (".", "'.'"),
        ("a//b", "empty"),
        ("a/", "empty"),
        ("a\\b", "backslash"),
        ("a\x00b", "control"),
        ("a\nb", "control"),
        ("a\x7fb", "control"),
        ("x" * 3073, "3072"),
        ("é" * 1537, "3072"),
        ("bad\udcff", "UTF-8"),
    ],
)
def test_bad_paths(path, why):
    with pytest.raises(ValueError, match=why):
        check_path(path)


@pytest.mark.parametrize(
    "files, why",
    [
        ([("a", H1), ("a", H2)], "twice"),
        ([("a", H1), ("a/b", H2)], "both a file and a directory"),
        ([("x/a", H1), ("x/a-b", H1), ("x/a/c/d", H2)], "both a file and a directory"),
    ],
)
def test_manifest_refusals(files, why):
    with pytest.raises(ValueError, match=why):
        canonical({"path": p, "size": 1, "hash": h} for p, h in files)


@pytest.mark.parametrize(
    "text_, expected",
    [
        ("vision/mnist", Ref("vision", "mnist", None)),
        ("vision/mnist@3", Ref("vision", "mnist", "3")),
        ("vision/mnist@v3", Ref("vision", "mnist", "v3")),
        ("default/imgs-2@best", Ref("default", "imgs-2", "best")),
    ],
)
def test_parse_ref(text_, expected):
    assert parse_ref(text_) == expected
    assert str(expected) == text_


@pytest.mark.parametrize(
    "text_", ["mnist", "Vision/mnist", "vision/", "vision/mnist@", "a/b/c", "vision/-x", "vision/mnist@a/b"]
)
def test_bad_refs(text_):
    with pytest.raises(ValueError, match="dataset name|after @"):
        parse_ref(text_)


def test_diff():
    old = [
        {"path": "a", "size": 1, "hash": H1},
        {"path": "b", "size": 2, "hash": H1},
        {"path": "c", "size": 3, "hash": H1},
    ]
    new = [
        {"path": "a", "size": 1, "hash": H1},
        {"path": "b", "size": 5, "hash": H2},
        {"path": "d", "size": 4, "hash": H2},
    ]
    assert diff(old, new) == {
        "added": [{"path": "d", "size": 4}],
        "removed": [{"path": "c", "size": 3}],
        "changed": [{"path": "b", "old_size": 2, "size": 5}],
    }
    assert diff(new, new) == {"added": [], "removed": [], "changed": []}


def test_pack_records_round_trip():
    records = [(blake3(d).hexdigest(), d) for d in (b"hello", b"", b"x" * 100_000)]
    data = encode(records)
    assert data[:HEADER] == bytes.fromhex(records[0][0]) + (5).to_bytes(8, "big")
    assert header(H1, 2**40)[32:] == b"\x00\x00\x01\x00\x00\x00\x00\x00"
    assert decode(data) == records
    for step in (1, 7, 40, 41, 65536):  # fed in arbitrary pieces
        decoder, got, parts = PackDecoder(), [], []
        for i in range(0, len(data), step):
            for record in decoder.feed(data[i : i + step]):
                parts.append(record.data)
                if record.end:
                    got.append((record.hash, b"".join(parts)))
                    parts = []
        decoder.close()
        assert got == records
    with pytest.raises(ValueError, match="inside a record"):
        decode(data[:-1])
    with pytest.raises(ValueError, match="64 hex"):
        header("abc", 1)


def test_pack_body_streams_files(tmp_path):
    items = []
    for i, size in enumerate((0, 10, 3 << 20)):
        path = tmp_path / f"f{i}"
        path.write_bytes(os.urandom(size))
        items.append(Item(blake3(path.read_bytes()).hexdigest(), size, str(path)))
    sent = []
    chunks = list(pack_body(items, sent.append))
    assert max(len(c) for c in chunks) <= 1 << 20
    body = b"".join(chunks)
    assert len(body) == body_length(items) == sum(sent)
    assert decode(body) == [(i.hash, open(i.path, "rb").read()) for i in items]
    (tmp_path / "f1").write_bytes(b"short")
    with pytest.raises(OSError, match="changed while"):
        b"".join(pack_body(items))


@pytest.mark.parametrize("block", [64, 1000, 1 << 20])
def test_pack_body_from_bytes_in_hand_equals_reading_the_files(tmp_path, block):
    """Items that bring their bytes (read while hashing) make the same pack, the files unread."""
    blobs = [os.urandom(n) for n in (0, 7, 63, 64, 65, 3000, 40)]
    items = []
    for i, blob in enumerate(blobs):
        path = tmp_path / f"f{i}"
        path.write_bytes(blob)
        items.append(Item(blake3(blob).hexdigest(), len(blob), str(path)))
    from_files = list(pack_body(items, block=block))
    for path in tmp_path.iterdir():
        path.unlink()  # the bytes in hand must be enough
    in_hand = [item._replace(data=blob) for item, blob in zip(items, blobs)]
    from_bytes = list(pack_body(in_hand, block=block))
    assert b"".join(from_bytes) == b"".join(from_files)
    assert max(map(len, from_bytes)) <= block + HEADER
    with pytest.raises(OSError, match="bytes in hand for a record of"):
        list(pack_body([in_hand[1]._replace(data=b"x")], block=block))


def test_plan_packs_respects_the_limit():
    items = [Item(H1, size, "") for size in (10, 20, 30, 5, 100)]
    packs = plan_packs(items, limit=HEADER * 2 + 40)
    assert [[i.size for i in p] for p in packs] == [[10, 20], [30, 5], [100]]
    assert plan_packs([]) == []


def test_stat_cache_hits_and_misses(tmp_path):
    root = str(tmp_path / "data")
    with StatCache(tmp_path / "cache.sqlite") as cache:
        assert cache.load(root) == {}
        assert cache.store(root, [("a.txt", Stat(1, 10, 100), H1), ("sub/b", Stat(2, 20, 200), H2)]) == 2
        cache.store(str(tmp_path / "data2"), [("c", Stat(3, 30, 300), H1)])  # a sibling with a longer name
        assert cache.load(root) == {"a.txt": (1, 10, 100, H1), "sub/b": (2, 20, 200, H2)}
        cache.store(root, [("a.txt", Stat(5, 11, 100), H2)])
        assert cache.load(root)["a.txt"] == (5, 11, 100, H2)
        assert cache.tree(root) is None
        cache.remember_tree(root, b"snapshot", H1)
        assert cache.tree(root) == (b"snapshot", H1)
    with StatCache(tmp_path / "cache.sqlite") as cache:  # persisted
        assert len(cache.load(root)) == 2
    assert NoCache().load(root) == {} and NoCache().store(root, [("a", Stat(1, 1, 1), H1)]) == 0


def test_hash_files_uses_the_cache(tmp_path, monkeypatch):
    from yitong_lab.datasets import local

    root = tmp_path / "d"
    (root / "s").mkdir(parents=True)
    for name, data in {"a": b"1", "s/b": b"22", "big": os.urandom((1 << 20) + 5)}.items():
        (root / name).write_bytes(data)
    files = local.scan(str(root))
    assert [f[0] for f in files] == ["a", "big", "s/b"]
    hashed = []
    for name in ("hash_path", "_hash_small"):
        real = getattr(local, name)
        monkeypatch.setattr(local, name, lambda p, *a, real=real: hashed.append(p) or real(p, *a))
    batch = local._hash_small_batch  # small files are read in batches, one loop each
    monkeypatch.setattr(
        local, "_hash_small_batch", lambda r, files, keep: hashed.extend(f[0] for f in files) or batch(r, files, keep)
    )
    with StatCache(tmp_path / "c.sqlite") as cache:
        first = local.hash_files(str(root), files, cache)
        assert first == {f[0]: blake3((root / f[0]).read_bytes()).hexdigest() for f in files}
        assert len(hashed) == 3
        assert local.hash_files(str(root), files, cache) == first and len(hashed) == 3  # all hits
        (root / "a").write_bytes(b"changed")
        files = local.scan(str(root))
        assert local.hash_files(str(root), files, cache)["a"] == blake3(b"changed").hexdigest()
        assert len(hashed) == 4  # only the changed file was read


@pytest.mark.parametrize(
    "model, expected",
    [
        (
            {"dataset": "v/m", "number": 3, "files": 2, "bytes": 5, "unchanged": True},
            "nothing changed: v/m v3 already has this content (2 files, 5 B)",
        ),
        (
            {"dataset": "v/m", "number": 4, "files": 1, "bytes": 2048, "uploaded": {"objects": 1, "bytes": 2048}},
            "committed v/m v4: 1 file, 2 KiB (uploaded 1 object, 2 KiB)",
        ),
    ],
)
def test_commit_text(model, expected):
    assert text.commit_text(model) == expected


def test_diff_text():
    d = {
        "from": "1",
        "to": 2,
        "added": [{"path": "n", "size": 1}],
        "removed": [],
        "changed": [{"path": "c", "old_size": 1024, "size": 3}],
    }
    assert text.diff_text("v/m", d) == "v/m v1 -> v2: 1 added, 0 removed, 1 changed\n+ n  (1 B)\nM c  (1 KiB -> 3 B)"


def test_importing_the_sdk_and_grammar_stays_cheap():
    import subprocess
    import sys

    heavy = ("httpx", "blake3", "tqdm", "ipywidgets", "IPython", "sqlite3", "concurrent.futures")
    code = (
        "import sys, yitong_lab.datasets, yitong_lab.magics, yitong_lab.cli.grammar\n"
        "yitong_lab.cli.grammar.build_parser()\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr


def test_widget_progress(monkeypatch):
    import IPython.display

    from yitong_lab.datasets import progress

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    bar = progress.make("widget")
    bar.start("upload", 3 << 20)
    bar.update(1 << 20)
    bar.update(2 << 20)
    bar.close()
    (box,) = shown
    widget, label = box.children
    assert (widget.value, widget.max, widget.description, widget.bar_style) == (
        3 << 20,
        3 << 20,
        "uploading",
        "success",
    )
    assert label.value == "3 MiB / 3 MiB"
    assert isinstance(progress.make(None), progress.Progress) and type(progress.make("auto")) is progress.Progress


def test_scan_of_a_single_file_is_a_tree_of_one(tmp_path):
    from yitong_lab.datasets.local import base_dir, scan

    (tmp_path / "d").mkdir()
    f = tmp_path / "d" / "weights.bin"
    f.write_bytes(b"x" * 10)
    (tmp_path / "d" / "other.bin").write_bytes(b"y")
    [(name, size, _, _)] = scan(str(f))
    assert (name, size) == ("weights.bin", 10)
    assert base_dir(str(f)) == str(tmp_path / "d") and base_dir(str(tmp_path / "d")) == str(tmp_path / "d")


def test_small_files_changed_after_the_scan_are_hashed_as_they_are_now(tmp_path):
    """The batch loop trusts a read only when the descriptor's stat equals the scan's; a file
    rewritten, grown or removed since the scan goes the careful way (hashed again, or refused)."""
    from yitong_lab.datasets import local
    from yitong_lab.datasets.statcache import NoCache

    root = tmp_path / "d"
    root.mkdir()
    for name in ("same", "grown", "rewritten", "gone"):
        (root / name).write_bytes(b"x" * 100)
    files = local.scan(str(root))
    (root / "grown").write_bytes(b"y" * 150)
    (root / "rewritten").write_bytes(b"z" * 100)
    os.utime(root / "rewritten", ns=(1, 1))  # same size, another mtime
    (root / "gone").unlink()
    with pytest.raises(FileNotFoundError):
        local.hash_files(str(root), files, NoCache())
    files = [f for f in files if f[0] != "gone"]
    rows = []
    hashes = local.hash_files(str(root), files, NoCache(), sink=rows.extend)
    assert hashes == {n: blake3((root / n).read_bytes()).hexdigest() for n in ("same", "grown", "rewritten")}
    by_path = {row[0]: row for row in rows}
    assert by_path["grown"][1][0] == 150 and by_path["grown"][3] is None  # read again to upload
    assert by_path["rewritten"][1][1] == 1 and by_path["same"][3] == b"x" * 100
