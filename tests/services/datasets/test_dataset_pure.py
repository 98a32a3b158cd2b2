"""The pure parts of datasets against literals: manifest form and hash, diff, path rules,
the pack record reader (any chunking), HTTP ranges, visibility rules."""

import json
import random
import re

import pytest
from blake3 import blake3

from yitong_services.core.authz import Person, sees_dataset
from yitong_services.datasets.manifest import (
    apply_changes,
    canonical,
    diff,
    encode,
    manifest_hash,
    path_refusal,
)
from yitong_services.datasets.packs import PackError, PackReader, record_header
from yitong_services.datasets.streams import parse_range

H = {c: blake3(c.encode()).hexdigest() for c in "abc"}


def test_canonical_sorts_by_utf8_bytes_and_hash_is_the_contract():
    files = [
        {"path": "é.txt", "size": 1, "hash": H["a"]},
        {"path": "z.txt", "size": 2, "hash": H["b"]},
        {"path": "Z/a", "size": 3, "hash": H["c"]},
    ]
    m = canonical(files)
    assert [f["path"] for f in m["files"]] == ["Z/a", "z.txt", "é.txt"]
    text = (
        '{{"files":[{{"hash":"{}","path":"Z/a","size":3}},{{"hash":"{}","path":"z.txt","size":2}},'
        '{{"hash":"{}","path":"é.txt","size":1}}]}}'.format(H["c"], H["b"], H["a"])
    )
    assert manifest_hash(m) == blake3(text.encode()).hexdigest()
    assert json.loads(text) == m


def test_canonical_order_is_utf8_byte_order_beyond_the_bmp():
    names = ["b", "a/z", "a-b", "Z", "é", "\U0001f600", "\uffff", "a0", "\u2028"]
    m = canonical({"path": n, "size": 1, "hash": H["a"]} for n in names)
    assert [f["path"] for f in m["files"]] == sorted(names, key=lambda p: p.encode("utf-8"))


@pytest.mark.parametrize(
    "path,ok",
    [
        ("a/b.txt", True),
        ("...", True),
        ("a..b", True),
        (".hidden", True),
        ("数据/x", True),
        ("../x", False),
        ("a/..", False),
        ("/x", False),
        ("a\\b", False),
        ("a\x00", False),
        ("a\x7f", False),
        ("./x", False),
        ("a//b", False),
        ("a/", False),
        ("", False),
        ("\ud800", False),
        # what a disk can hold: a name of at most 255 bytes, at most 256 levels
        ("a" * 255, True),
        ("a" * 256, False),
        ("é" * 128, False),
        ("/".join(["a"] * 256), True),
        ("/".join(["a"] * 257), False),
    ],
)
def test_path_rules(path, ok):
    assert (path_refusal(path) is None) == ok, path_refusal(path)
    # canonical's one-regex fast path refuses exactly what path_refusal refuses
    entry = {"path": path, "size": 1, "hash": H["a"]}
    if ok:
        assert canonical([entry])["files"] == [entry]
    else:
        with pytest.raises(ValueError):
            canonical([entry])


def test_encode_is_the_contracts_json_dumps():
    names = [
        'a"quoted".txt',
        "é/ü ß.bin",
        "数据/x y",
        "tab-free/'single'",
        "/".join(["a" * 200] * 15),
        "emoji-😀",
        "ab:c",
    ]
    m = canonical({"path": n, "size": i * 7, "hash": H["abc"[i % 3]]} for i, n in enumerate(names))
    assert encode(m) == json.dumps(m, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.parametrize(
    "files, says",
    [
        ([{"path": "a", "size": 1, "hash": "x"}], "is not a BLAKE3 hash"),
        ([{"path": "a", "size": True, "hash": "0" * 64}], "is not a byte count"),
        ([{"path": "a", "size": -1, "hash": "0" * 64}], "is not a byte count"),
        ([{"path": "a", "size": 1, "hash": "0" * 64}] * 2, "appears twice"),
        (
            [{"path": "a/b/c", "size": 1, "hash": "0" * 64}, {"path": "a/b", "size": 1, "hash": "0" * 64}],
            "'a/b' is both",
        ),
        ([{"path": "a/" * 1536 + "b", "size": 1, "hash": "0" * 64}], "longer than 3072 bytes"),
        ([{"path": "é/" * 1025, "size": 1, "hash": "0" * 64}], "longer than 3072 bytes"),
    ],
)
def test_canonical_refusals(files, says):
    with pytest.raises(ValueError, match=says):
        canonical(files)


def test_diff():
    old = canonical([{"path": "a", "size": 1, "hash": H["a"]}, {"path": "b", "size": 2, "hash": H["b"]}])
    new = canonical([{"path": "b", "size": 3, "hash": H["c"]}, {"path": "c", "size": 4, "hash": H["a"]}])
    assert diff(old, new) == {
        "added": [{"path": "c", "size": 4}],
        "removed": [{"path": "a", "size": 1}],
        "changed": [{"path": "b", "old_size": 2, "size": 3}],
    }


@pytest.mark.parametrize("chunk", [1, 7, 40, 41, 1000])
def test_pack_reader_any_chunking(chunk):
    blobs = [b"", b"x" * 100, b"hello"]
    stream = b"".join(record_header(blake3(b).hexdigest(), len(b)) + b for b in blobs)
    reader = PackReader(limit=1000)
    for i in range(0, len(stream), chunk):
        reader.feed(stream[i : i + chunk])
    records = reader.finish()
    assert [(r.hash, r.size) for r in records] == [(blake3(b).hexdigest(), len(b)) for b in blobs]
    assert [stream[r.offset : r.offset + r.size] for r in records] == blobs


def _naive_apply(base, put, delete):
    """The changes applied the obvious way: the whole merged list through ``canonical``."""
    entries = {f["path"]: f for f in base["files"]}
    for path in delete:
        if entries.pop(path, None) is None:
            raise ValueError(f"delete names '{path}', which the parent does not have")
    if set(delete) & {f["path"] for f in put}:
        raise ValueError("both put and deleted")
    for f in put:
        entries[f["path"]] = f
    return canonical(entries.values())


def test_apply_changes_equals_the_whole_manifest_way():
    """Bisection over the base gives what merging everything and checking it all gives: the
    same manifest, or a refusal in the same cases (file/directory clashes included)."""
    rng = random.Random(11)
    names = ["a", "a/b", "a/c", "a-x", "b", "b/c/d", "é", "z/y", "a/b/c", "q"]
    for _ in range(3000):
        base_paths = rng.sample(names, rng.randint(0, 5))
        try:
            base = canonical({"path": p, "size": 1, "hash": H["a"]} for p in base_paths)
        except ValueError:
            continue
        delete = rng.sample(base_paths, rng.randint(0, len(base_paths)))
        put = [{"path": p, "size": 2, "hash": H["b"]} for p in rng.sample(names, rng.randint(0, 3))]
        try:
            expected = _naive_apply(base, put, delete)
        except ValueError:
            expected = None
        try:
            got, changed = apply_changes(base, put, delete)
        except ValueError:
            got = changed = None
        assert got == expected, (base_paths, [f["path"] for f in put], delete)
        if got is not None:
            assert changed == canonical(put)["files"]
            assert encode(got) == encode(expected)


@pytest.mark.parametrize(
    "put,delete,says",
    [
        ([], ["nope"], "delete names 'nope', which the parent does not have"),
        ([], ["a", "a"], "delete names 'a' twice"),
        (["a"], ["a"], "'a' is both put and deleted"),
        (["a/x"], [], "path 'a' is both a file and a directory"),
        (["d"], [], "path 'd' is both a file and a directory"),
        (["n", "n"], [], "appears twice"),
        (["../n"], [], "leaves the dataset root"),
    ],
)
def test_apply_changes_refusals(put, delete, says):
    base = canonical({"path": p, "size": 1, "hash": H["a"]} for p in ["a", "d/e"])
    with pytest.raises(ValueError, match=re.escape(says)):
        apply_changes(base, [{"path": p, "size": 1, "hash": H["b"]} for p in put], delete)


def test_pack_reader_records_whole_and_split_across_chunks():
    """Records that fit in a chunk take the one-step path, the others the incremental one;
    offsets and hashes agree whichever way a stream is cut."""
    rng = random.Random(7)
    blobs = [rng.randbytes(rng.choice([0, 1, 39, 40, 41, 300, 5000])) for _ in range(60)]
    stream = b"".join(record_header(blake3(b).hexdigest(), len(b)) + b for b in blobs)
    for _ in range(20):
        reader, i = PackReader(limit=10_000), 0
        while i < len(stream):
            step = rng.choice([1, 17, 40, 333, 4096, 20_000])
            reader.feed(memoryview(stream)[i : i + step])
            i += step
        records = reader.finish()
        assert [stream[r.offset : r.offset + r.size] for r in records] == blobs
        assert [r.hash for r in records] == [blake3(b).hexdigest() for b in blobs]
        assert reader.position == len(stream)
    reader = PackReader(limit=10_000)
    bad = bytearray(stream)
    bad[-1] ^= 1  # the last record is whole in one chunk: the one-step path must check it too
    with pytest.raises(PackError, match="has the BLAKE3"):
        reader.feed(bytes(bad))


def test_pack_reader_refusals():
    reader = PackReader(limit=10)
    with pytest.raises(PackError) as e:
        reader.feed(record_header(H["a"], 11))
    assert e.value.status == 413
    reader = PackReader(limit=10)
    with pytest.raises(PackError, match=f"object {H['a']} in the pack has the BLAKE3"):
        reader.feed(record_header(H["a"], 1) + b"b")


@pytest.mark.parametrize(
    "header,expected",
    [
        (None, None),
        ("bytes=0-9", (0, 10)),
        ("bytes=90-", (90, 100)),
        ("bytes=-10", (90, 100)),
        ("bytes=95-200", (95, 100)),
        ("bytes=0-1,5-6", None),
        ("items=0-1", None),
    ],
)
def test_parse_range(header, expected):
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize("header", ["bytes=100-", "bytes=5-2", "bytes=-0"])
def test_parse_range_unsatisfiable(header):
    with pytest.raises(ValueError):
        parse_range(header, 100)


@pytest.mark.parametrize(
    "person,visibility,sees",
    [
        (Person("alice", groups=("vision",)), "private", True),  # owner
        (Person("erin", groups=("vision",)), "private", False),  # member, not owner
        (Person("erin", groups=("vision",)), "vc", True),
        (Person("carol", groups=("everyone",)), "vc", False),
        (Person("root", admin=True), "private", True),
    ],
)
def test_visibility(person, visibility, sees):
    assert sees_dataset(person, "alice", visibility, ["vision"]) == sees
