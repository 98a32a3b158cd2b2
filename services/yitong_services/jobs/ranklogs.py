"""Per-rank log files of one attempt, ``<attempt dir>/logs/rank-<r>.log``: the local and Slurm
runners write them the same way and read them back with these (blocking: call in a thread)."""

from __future__ import annotations

import os
import re
from pathlib import Path

CHUNK = 1 << 20
_NAME = re.compile(r"rank-(\d+)\.log")


def read_nofollow(directory: Path, relative: str, offset: int = 0, size: int = CHUNK) -> bytes:
    """``size`` bytes of ``directory/relative`` from ``offset``, following no symbolic link below
    ``directory`` (a job that owns its attempt directory cannot point the service at other files)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(directory, flags | os.O_DIRECTORY)
    try:
        *dirs, name = relative.split("/")
        for part in dirs:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        leaf = os.open(name, flags, dir_fd=fd)
    finally:
        os.close(fd)
    with os.fdopen(leaf, "rb") as f:
        f.seek(offset)
        return f.read(size)


def read(attempt_dir: Path, rank: int, offset: int = 0) -> bytes:
    """Up to 1 MiB of rank ``rank``'s log from ``offset`` (empty when there is none yet, or it is a link)."""
    try:
        return read_nofollow(attempt_dir, f"logs/rank-{int(rank)}.log", offset)
    except FileNotFoundError:
        return b""
    except OSError:  # ELOOP / ENOTDIR: a link where a log should be
        return b""


def ranks(attempt_dir: Path) -> list[int]:
    logs = attempt_dir / "logs"
    names = os.listdir(logs) if logs.is_dir() else []
    return sorted(int(m.group(1)) for n in names if (m := _NAME.fullmatch(n)))
