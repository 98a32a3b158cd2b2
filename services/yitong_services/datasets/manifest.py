"""Manifests, pure: path rules, the canonical form and its BLAKE3 hash, and diffs.

A manifest is ``{"files": [{"path", "size", "hash"}, ...]}`` sorted by the UTF-8 bytes of
``path``. Its hash is BLAKE3 of ``json.dumps(manifest, sort_keys=True, separators=(",", ":"),
ensure_ascii=False).encode()``: the client computes the same value.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

from blake3 import blake3

HASH_RE = re.compile(r"^[0-9a-f]{64}$")
#: what a disk can hold, so a version that commits can also be materialised and pulled: the whole
#: path leaves 1 KiB of Linux's PATH_MAX (4096) for the folder it lands under, a segment fits a
#: file name (NAME_MAX, 255 bytes), and the depth stays far from what walks and tools recurse into
MAX_PATH_BYTES = 3072
MAX_SEGMENT_BYTES = 255
MAX_SEGMENTS = 256
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class CorruptManifest(Exception):
    """A stored manifest that does not parse or does not match its hash."""


def path_refusal(path: object) -> str | None:
    """Why ``path`` may not name a file in a dataset (None: it may)."""
    if not isinstance(path, str) or not path:
        return f"path {path!r} is empty or not a string"
    try:
        path.encode("utf-8")
        shown = repr(path)[1:-1] if _CONTROL.search(path) else path
    except UnicodeEncodeError:
        return f"path {ascii(path)} is not valid UTF-8"
    if _CONTROL.search(path):
        return f"path '{shown}' contains a NUL or control character"
    if "\\" in path:
        return f"path '{shown}' contains a backslash"
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return f"path '{shown}' is absolute"
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        return f"path '{shown[:60]}...' is longer than {MAX_PATH_BYTES} bytes"
    segments = path.split("/")
    if ".." in segments:
        return f"path '{shown}' leaves the dataset root"
    if "." in segments:
        return f"path '{shown}' has a '.' segment"
    if "" in segments:
        return f"path '{shown}' has an empty segment"
    if len(segments) > MAX_SEGMENTS:
        return f"path '{shown[:60]}...' is {len(segments)} levels deep; a dataset path has at most {MAX_SEGMENTS}"
    long = next((seg for seg in segments if len(seg.encode("utf-8")) > MAX_SEGMENT_BYTES), None)
    if long is not None:
        return (
            f"path '{shown[:60]}...' has a name of {len(long.encode('utf-8'))} bytes ('{long[:40]}...'); "
            f"a file or folder name is at most {MAX_SEGMENT_BYTES} bytes"
        )
    return None


def hash_refusal(value: object) -> str | None:
    if isinstance(value, str) and HASH_RE.match(value):
        return None
    return f"{value!r} is not a BLAKE3 hash (64 lowercase hex digits)"


def _key(entry: dict[str, Any]) -> str:
    """The sort key of an entry: its path, as code point order is UTF-8 byte order for every
    path :func:`canonical` accepts (lone surrogates, which break that, are refused)."""
    return entry["path"]


# One search finds every path that needs a closer look (path_refusal then says why).
_SUSPECT = re.compile(r"[\x00-\x1f\x7f\\]|^/|^[A-Za-z]:|(?:^|/)\.{1,2}(?:/|$)|//|^$|/$")


def canonical(files: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Check every entry and return the sorted manifest; ValueError names the first problem."""
    out: list[dict[str, Any]] = []
    suspect, hash_ok = _SUSPECT.search, HASH_RE.match
    for entry in files:
        path, digest, size = entry.get("path"), entry.get("hash"), entry.get("size")
        # a path of at most MAX_SEGMENT_BYTES ASCII characters has no long name and no deep nesting
        if not isinstance(path, str) or suspect(path) or not path.isascii() or len(path) > MAX_SEGMENT_BYTES:
            refused = path_refusal(path)
            if refused:
                raise ValueError(refused)
        if not isinstance(digest, str) or not hash_ok(digest):
            raise ValueError(f"{path}: {hash_refusal(digest)}")
        if type(size) is not int or size < 0:
            raise ValueError(f"{path}: size {size!r} is not a byte count")
        out.append({"path": path, "size": size, "hash": digest})
    out.sort(key=_key)
    paths: set[str] = set()
    dirs: set[str] = set()
    previous = None
    for f in out:
        name: str = f["path"]
        if name == previous:
            raise ValueError(f"path '{name}' appears twice")
        previous = name
        paths.add(name)
        cut = name.find("/")
        while cut != -1:
            dirs.add(name[:cut])
            cut = name.find("/", cut + 1)
    both = paths & dirs
    if both:
        raise ValueError(f"path '{min(both)}' is both a file and a directory")
    return {"files": out}


def _path(entry: dict[str, Any]) -> str:
    return entry["path"]


def apply_changes(base: dict[str, Any], put: Iterable[Mapping[str, Any]], delete: Iterable[str]) -> tuple[dict, list]:
    """``(manifest, checked put entries)``: the canonical manifest ``base`` with ``delete``
    removed and ``put`` added or replaced. Only the changes are checked (``base`` is a stored
    version's, canonical already) and looked up by bisection in its sorted list (code point
    order is UTF-8 byte order), so beyond copying the list the work follows the change.
    ValueError names the first problem."""
    files = base["files"]
    changed = canonical(put)["files"]

    def find(path: str) -> int | None:
        i = bisect_left(files, path, key=_path)
        return i if i < len(files) and files[i]["path"] == path else None

    gone: set[int] = set()
    for path in delete:
        i = find(path) if isinstance(path, str) else None
        if i is None:
            raise ValueError(f"delete names '{path}', which the parent does not have")
        if i in gone:
            raise ValueError(f"delete names '{path}' twice")
        gone.add(i)
    replaced: set[int] = set()
    for entry in changed:
        path = entry["path"]
        i = find(path)
        if i is not None:
            if i in gone:
                raise ValueError(f"'{path}' is both put and deleted")
            replaced.add(i)
        cut = path.rfind("/")
        while cut != -1:  # a parent directory of the new path is a file of the base
            j = find(path[:cut])
            if j is not None and j not in gone:
                raise ValueError(f"path '{path[:cut]}' is both a file and a directory")
            cut = path.rfind("/", 0, cut)
        j = bisect_left(files, path + "/", key=_path)  # the base has files under the new path
        while j < len(files) and files[j]["path"].startswith(path + "/"):
            if j not in gone:
                raise ValueError(f"path '{path}' is both a file and a directory")
            j += 1
    drop = gone | replaced
    kept = [f for i, f in enumerate(files) if i not in drop] if drop else list(files)
    kept += changed
    kept.sort(key=_key)  # nearly sorted: a merge pass
    return {"files": kept}, changed


def encode(manifest: dict[str, Any]) -> bytes:
    """The canonical bytes: equal to ``json.dumps(manifest, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False).encode()`` for a canonical manifest (tests compare), built without the
    generic encoder's per-dict key sorting."""
    quote = encode_basestring  # what json.dumps(..., ensure_ascii=False) uses for a str, in C
    body = ",".join(
        f'{{"hash":"{f["hash"]}","path":{quote(f["path"])},"size":{int(f["size"])}}}' for f in manifest["files"]
    )
    return f'{{"files":[{body}]}}'.encode()


def manifest_hash(manifest: dict[str, Any]) -> str:
    return blake3(encode(manifest)).hexdigest()


def totals(manifest: dict[str, Any]) -> tuple[int, int]:
    """(file count, bytes)."""
    files = manifest["files"]
    return len(files), sum(f["size"] for f in files)


def hashes(manifest: dict[str, Any]) -> dict[str, int]:
    """hash -> size of every distinct object the manifest names."""
    return {f["hash"]: f["size"] for f in manifest["files"]}


def diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Files added, removed and changed (by hash) between two manifests, in path order."""
    before = {f["path"]: f for f in old["files"]}
    after = {f["path"]: f for f in new["files"]}
    added = [{"path": p, "size": f["size"]} for p, f in after.items() if p not in before]
    removed = [{"path": p, "size": f["size"]} for p, f in before.items() if p not in after]
    changed = [
        {"path": p, "old_size": before[p]["size"], "size": f["size"]}
        for p, f in after.items()
        if p in before and before[p]["hash"] != f["hash"]
    ]
    for items in (added, removed, changed):
        items.sort(key=_key)
    return {"added": added, "removed": removed, "changed": changed}
