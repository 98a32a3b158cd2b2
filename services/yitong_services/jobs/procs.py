"""Process facts from /proc (Linux): start times that survive pid reuse, process groups.

Blocking but cheap (a few small reads); the runner calls them in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses
    return raw[raw.rindex(")") + 2:].split()


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
