"""Manifests, pure: path rules, the canonical form and its BLAKE3 hash, and diffs.

A manifest is ``{"files": [{"path", "size", "hash"}, ...]}`` sorted by the UTF-8 bytes of
``path``. Its hash is BLAKE3 of ``json.dumps(manifest, sort_keys=True, separators=(",", ":"),
ensure_ascii=False).encode()``: the client computes the same value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from blake3 import blake3

HASH_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_PATH_BYTES = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


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
    return None


def hash_refusal(value: object) -> str | None:
    if isinstance(value, str) and HASH_RE.match(value):
        return None
    return f"{value!r} is not a BLAKE3 hash (64 lowercase hex digits)"


def _key(entry: dict[str, Any]) -> bytes:
    return entry["path"].encode("utf-8")


def canonical(files: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Check every entry and return the sorted manifest; ValueError names the first problem."""
    out = []
    for entry in files:
        refused = path_refusal(entry.get("path"))
        if refused:
            raise ValueError(refused)
        refused = hash_refusal(entry.get("hash"))
        if refused:
            raise ValueError(f"{entry['path']}: {refused}")
        size = entry.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"{entry['path']}: size {size!r} is not a byte count")
        out.append({"path": entry["path"], "size": size, "hash": entry["hash"]})
    out.sort(key=_key)
    for before, after in zip(out, out[1:]):
        if before["path"] == after["path"]:
            raise ValueError(f"path '{before['path']}' appears twice")
    paths = {f["path"] for f in out}
    for f in out:
        parts = f["path"].split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in paths:
                raise ValueError(f"path '{'/'.join(parts[:i])}' is both a file and a directory")
    return {"files": out}


def encode(manifest: dict[str, Any]) -> bytes:
    return json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


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
