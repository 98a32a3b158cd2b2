"""Process facts from /proc (Linux): start times that survive pid reuse, process groups.

Blocking but cheap (a few small reads); the runner calls them in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses
    return raw[raw.rindex(")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """Clock ticks since boot when ``pid`` started (field 22), None if there is no such process."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def alive(pid: int, started: int) -> bool:
    """The same process (not a reused pid) still exists and is not a zombie."""
    return start_time(pid) == started and state(pid) not in ("Z", "X", None)


def uid(pid: int) -> int | None:
    """The real uid of ``pid`` (None if there is no such process)."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
        return None
    return None


def read_owned(path: Path, owner: int, limit: int = 1 << 20, offset: int = 0) -> bytes | None:
    """Up to ``limit`` bytes of the regular file ``path`` from ``offset`` if ``owner`` owns it;
    None when it is missing. A symlink in the last component, a FIFO, or a file of another account
    (a job pointing its log at a secret or at another job's file) is refused (PermissionError):
    the platform reads files in directories its jobs own."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise PermissionError(f"{path} is not a plain file of the job's") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != owner:
            raise PermissionError(f"{path} is not a plain file of the job's")
        return os.pread(fd, limit, offset)
    finally:
        os.close(fd)


def group_members(pgid: int) -> list[int]:
    out = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields and int(fields[2]) == pgid:
                out.append(int(entry.name))
    return out


def find_by_argv(needle: str) -> int | None:
    """The pid whose command line contains the argument ``needle`` (the wrapper's attempt dir)."""
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            args = (entry / "cmdline").read_bytes().split(b"\0")
            if needle.encode() in args and state(int(entry.name)) not in ("Z", "X", None):
                return int(entry.name)
    return None


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
