"""What code a job runs: ``{commit, dirty_hash, path}`` of the directory it is submitted from.

- In a git work tree: ``commit`` = ``git rev-parse HEAD``; ``dirty_hash`` = ``blake3:<hex>`` of
  ``git diff HEAD`` (binary, fixed prefixes, no external diff) followed by each untracked,
  not-ignored file (``git ls-files --others --exclude-standard``) as path, size and content;
  ``None`` when the tree is clean. Both cover the whole repository, whatever subdirectory the
  job is submitted from. A repository without commits: ``commit`` is ``None`` and the hash
  covers every tracked and untracked file.
- Elsewhere (no git, not a repository, a repository git refuses to read): ``commit`` is
  ``None`` and ``dirty_hash`` fingerprints the directory's files the same way (hidden entries
  and ``__pycache__`` skipped), or is ``None`` when there are more than :data:`MAX_FILES` files or
  :data:`MAX_BYTES` bytes (a home directory is not a project).
- ``path`` is the absolute directory: the local backend runs the job there.

A file over :data:`LARGE` bytes (an untracked data file, say) counts by its size and its first and
last MiB, so a submit never reads gigabytes.

git runs with argument lists, never through a shell. Only stdlib and blake3 are used.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

MAX_FILES = 5000
MAX_BYTES = 256 * 2**20
LARGE = 64 * 2**20
EDGE = 2**20
SKIP_DIRS = {"__pycache__", "node_modules"}
GIT_DIFF = [
    "diff",
    "--binary",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "HEAD",
]


class TooBig(Exception):
    """The directory is too large to fingerprint."""


def git(directory: Path, *args: str) -> bytes | None:
    """stdout of ``git -C directory args`` (bytes), or ``None`` when git fails or is absent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}  # no outer GIT_DIR
    env["LC_ALL"] = "C"
    try:
        result = subprocess.run(
            ["git", "-C", str(directory), *args], capture_output=True, env=env, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None


def _hasher() -> Any:
    from blake3 import blake3

    return blake3()


def _add_file(h: Any, root: Path, rel: str) -> int:
    """Feed ``rel`` (path, size, content) into ``h``; a symlink contributes its target."""
    p = root / rel
    h.update(b"F\0" + rel.encode("utf-8", "surrogateescape") + b"\0")
    try:
        if p.is_symlink():
            target = os.readlink(p).encode("utf-8", "surrogateescape")
            h.update(b"L%d\0" % len(target) + target)
            return len(target)
        size = p.stat().st_size
        h.update(b"%d\0" % size)
        with open(p, "rb") as f:
            if size > LARGE:
                h.update(f.read(EDGE))
                f.seek(size - EDGE)
                h.update(f.read(EDGE))
                return 2 * EDGE
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return size
    except OSError:  # vanished or unreadable: its name still counts
        h.update(b"?\0")
        return 0


def _hash_files(root: Path, rels: list[str], limit: bool = False) -> str | None:
    h, total = _hasher(), 0
    if limit and len(rels) > MAX_FILES:
        raise TooBig
    for rel in sorted(rels):
        total += _add_file(h, root, rel)
        if limit and total > MAX_BYTES:
            raise TooBig
    return f"blake3:{h.hexdigest()}"


def _split(out: bytes) -> list[str]:
    return [name.decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name]


def git_code(directory: Path) -> dict[str, Any] | None:
    """``{commit, dirty_hash}`` of the work tree holding ``directory``, ``None`` if it is not one."""
    top = git(directory, "rev-parse", "--show-toplevel")
    if top is None:
        return None
    root = Path(top.decode("utf-8", "surrogateescape").strip())
    head = git(root, "rev-parse", "--verify", "-q", "HEAD")
    untracked = git(root, "ls-files", "-z", "--others", "--exclude-standard")
    if untracked is None:
        return None
    if head is None:  # no commit yet: everything is "uncommitted"
        tracked = git(root, "ls-files", "-z", "--cached")
        rels = sorted(set(_split(tracked or b"")) | set(_split(untracked)))
        return {"commit": None, "dirty_hash": _hash_files(root, rels) if rels else None}
    diff = git(root, *GIT_DIFF)
    if diff is None:
        return None
    others = _split(untracked)
    if not diff and not others:
        return {"commit": head.decode().strip(), "dirty_hash": None}
    h = _hasher()
    h.update(b"D%d\0" % len(diff) + diff)
    for rel in sorted(others):
        _add_file(h, root, rel)
    return {"commit": head.decode().strip(), "dirty_hash": f"blake3:{h.hexdigest()}"}


def tree_files(root: Path) -> list[str]:
    """Relative paths of the files under ``root`` (hidden entries and caches skipped)."""
    out: list[str] = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        base = Path(current).relative_to(root)
        for name in files:
            if not name.startswith("."):
                out.append((base / name).as_posix())
                if len(out) > MAX_FILES:
                    raise TooBig
    return out


def capture(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """``{commit, dirty_hash, path}`` for a job submitted from ``directory`` (see module doc)."""
    path = Path(directory).expanduser().resolve()
    if not path.is_dir():
        raise NotADirectoryError(f"{directory} is not a directory")
    found = git_code(path)
    if found is None:
        try:
            files = tree_files(path)
            found = {"commit": None, "dirty_hash": _hash_files(path, files, limit=True) if files else None}
        except TooBig:
            found = {"commit": None, "dirty_hash": None}
    return {**found, "path": str(path)}
