"""Manifests: the canonical form and hash of docs/architecture.md, paths, refs and diffs.

Pure functions on plain values (stdlib, plus ``blake3`` for :func:`manifest_hash`):

>>> canonical([{"path": "b", "size": 1, "hash": "h2"}, {"path": "a", "size": 2, "hash": "h1"}])
{'files': [{'path': 'a', 'size': 2, 'hash': 'h1'}, {'path': 'b', 'size': 1, 'hash': 'h2'}]}
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any, NamedTuple

MAX_PATH_BYTES = 3072  # the service's limit (yitong_services.datasets.manifest)
NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")
HASH_RE = re.compile(r"^[0-9a-f]{64}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

File = dict[str, Any]  # {"path": str, "size": int, "hash": str}


def check_path(path: str) -> str:
    """``path`` when it is a manifest path (relative POSIX, no ``.``/``..``/empty segment, no
    leading ``/``, backslash, NUL or control character, at most 4096 UTF-8 bytes); else ValueError.
    """
    if not isinstance(path, str) or not path:
        raise ValueError("a dataset path must be a non-empty string")
    if _CONTROL.search(path):
        raise ValueError(f"{path!r}: control characters (NUL, newline, ...) are not allowed in a dataset path")
    if "\\" in path:
        raise ValueError(f"{path!r}: backslashes are not allowed in a dataset path")
    if path.startswith("/"):
        raise ValueError(f"{path!r}: a dataset path must be relative")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{path!r}: the file name is not valid UTF-8") from None
    if size > MAX_PATH_BYTES:
        raise ValueError(f"{path[:60]!r}...: a dataset path is at most {MAX_PATH_BYTES} bytes")
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            raise ValueError(f"{path!r}: empty, '.' and '..' segments are not allowed in a dataset path")
    return path


_BAD_CHAR = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\\]")  # control characters but \n, backslash
_BAD_SEGMENT = re.compile(r"(?:^|\n|/)\.{0,2}(?:/|\n|$)")  # empty, '.', '..'; leading or trailing '/'


def check_paths(paths: list[str]) -> None:
    """:func:`check_path` for many paths at C speed (one regex pass over all of them); the slow
    path runs only to name the first bad one."""
    blob = "\n".join(paths)
    try:
        blob.encode("utf-8")
        ok = (
            blob.count("\n") == len(paths) - 1
            and not _BAD_CHAR.search(blob)
            and not _BAD_SEGMENT.search(blob)
            and max(map(len, paths), default=0) <= MAX_PATH_BYTES // 4
        )
    except UnicodeEncodeError:
        ok = False
    if not ok:
        for path in paths:
            check_path(path)


def canonical(files: Iterable[File]) -> dict[str, list[File]]:
    """The manifest: entries reduced to ``path, size, hash``, sorted by the UTF-8 bytes of ``path``
    (= code point order, as lone surrogates are refused), every path checked, no duplicate, no
    path both a file and a directory of another."""
    entries = [{"path": f["path"], "size": int(f["size"]), "hash": str(f["hash"])} for f in files]
    entries.sort(key=lambda f: f["path"])
    paths = [f["path"] for f in entries]
    check_paths(paths)
    for before, after in zip(paths, paths[1:]):
        if before == after:
            raise ValueError(f"{before!r} appears twice in the manifest")
    directories: set[str] = set()
    for parent in {p.rpartition("/")[0] for p in paths}:
        while parent and parent not in directories:
            directories.add(parent)
            parent = parent.rpartition("/")[0]
    clash = directories.intersection(paths)
    if clash:
        raise ValueError(f"{min(clash)!r} is both a file and a directory in the manifest")
    return {"files": entries}


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """The exact bytes that are hashed: the contract's ``json.dumps(manifest, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)`` form of a canonical manifest, written out
    entry by entry (the generic encoder sorts the keys of 70,000 dicts; tests compare)."""
    quote = encode_basestring  # what json.dumps(..., ensure_ascii=False) uses for a str, in C
    body = ",".join(
        f'{{"hash":"{f["hash"]}","path":{quote(f["path"])},"size":{int(f["size"])}}}' for f in manifest["files"]
    )
    return f'{{"files":[{body}]}}'.encode()


def commit_body(fields: dict[str, Any], data: bytes) -> bytes:
    """The JSON body ``{**fields, "files": [...]}`` of a whole-manifest commit, with the
    manifest's canonical bytes ``data`` (:func:`manifest_bytes`) spliced in as they are: the
    entries are not encoded a second time.

    >>> commit_body({"parent": None}, b'{"files":[]}')
    b'{"parent":null,"files":[]}'
    """
    import json

    if not data.startswith(b'{"files":['):
        raise ValueError("not the canonical bytes of a manifest")
    head = json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode()
    return head[:-1] + b"," + data[1:] if fields else data


def changes(base: dict[str, Any], new: dict[str, Any]) -> tuple[list[File], list[str]]:
    """``(put, delete)`` turning manifest ``base`` into ``new``: entries added or changed, paths gone."""
    before = {f["path"]: f for f in base["files"]}
    after = {f["path"] for f in new["files"]}
    put = [f for f in new["files"] if before.get(f["path"]) != f]
    delete = [p for p in before if p not in after]
    return put, delete


def manifest_hash(manifest: dict[str, Any]) -> str:
    """BLAKE3 (hex) of :func:`manifest_bytes`: the same value the service computes."""
    from blake3 import blake3

    return blake3(manifest_bytes(manifest)).hexdigest()


def diff(old: Iterable[File], new: Iterable[File]) -> dict[str, list[dict[str, Any]]]:
    """``{"added": [{path, size}], "removed": [{path, size}], "changed": [{path, old_size, size}]}``
    (each sorted by path), the shape of the service's ``/diff``."""
    before = {f["path"]: f for f in old}
    after = {f["path"]: f for f in new}
    added = [{"path": p, "size": after[p]["size"]} for p in sorted(after.keys() - before.keys())]
    removed = [{"path": p, "size": before[p]["size"]} for p in sorted(before.keys() - after.keys())]
    changed = [
        {"path": p, "old_size": before[p]["size"], "size": after[p]["size"]}
        for p in sorted(before.keys() & after.keys())
        if before[p]["hash"] != after[p]["hash"]
    ]
    return {"added": added, "removed": removed, "changed": changed}


class Ref(NamedTuple):
    """``vc/name@ref``: ``ref`` is ``None`` (latest), a number, ``v<number>`` or a tag."""

    vc: str
    name: str
    ref: str | None = None

    @property
    def dataset(self) -> str:
        return f"{self.vc}/{self.name}"

    def __str__(self) -> str:
        return self.dataset + (f"@{self.ref}" if self.ref else "")


def parse_ref(text: str, allow_version: bool = True) -> Ref:
    """``"vision/mnist@v3"`` -> ``Ref("vision", "mnist", "v3")``; ValueError with a sentence."""
    dataset, at, ref = text.partition("@")
    vc, slash, name = dataset.partition("/")
    if not slash or not NAME_RE.match(vc) or not NAME_RE.match(name):
        raise ValueError(f"{text!r} is not a dataset name: use VC/NAME (a-z, 0-9, -), e.g. vision/mnist")
    if at and not allow_version:
        raise ValueError(f"{text!r}: name a dataset here, without @version")
    if at and (not ref or "/" in ref or _CONTROL.search(ref)):
        raise ValueError(f"{text!r}: after @ give a version number, v<number>, a tag or latest")
    return Ref(vc, name, ref or None)
