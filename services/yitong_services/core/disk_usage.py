"""How much a folder holds: bytes and files under it, for storage quotas and the storage walk.

The folders measured belong to people and jobs (hostile): links are never followed (a link
counts as itself), a file with several links counts once, other filesystems mounted inside are
not entered, and entries that vanish or cannot be read while the walk runs are skipped. The
walk is iterative (no recursion limit on deep trees). Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measured:
    bytes: int
    files: int


def measure(root: str | os.PathLike[str]) -> Measured:
    """Apparent bytes (``st_size``) and regular files under ``root`` (``root`` itself may be a
    file); ``Measured(0, 0)`` when it does not exist."""
    try:
        top = os.lstat(root)
    except OSError:
        return Measured(0, 0)
    if not stat.S_ISDIR(top.st_mode):
        return Measured(top.st_size if stat.S_ISREG(top.st_mode) else 0, 1 if stat.S_ISREG(top.st_mode) else 0)
    seen: set[tuple[int, int]] = set()
    size, files = 0, 0
    todo = [os.fspath(root)]
    while todo:
        here = todo.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev == top.st_dev:
                    todo.append(entry.path)
                continue
            if st.st_nlink > 1:
                key = (st.st_dev, st.st_ino)
                if key in seen:
                    continue
                seen.add(key)
            if stat.S_ISREG(st.st_mode):
                files += 1
                size += st.st_size
    return Measured(size, files)


def children(root: Path) -> list[Path]:
    """The folders right under ``root`` (not links), sorted; none when it is missing."""
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
