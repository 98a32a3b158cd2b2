"""Process facts from /proc (Linux): start times that survive pid reuse, process groups.

Blocking but cheap (a few small reads); the runner calls them in a worker thread. The job
wrapper imports this module too, in front of every job: only ``os`` and ``stat``, no pathlib.
"""

from __future__ import annotations

import os
import stat

PROC = "/proc"


def _read(path: str) -> str:
    """A small /proc file's text. Read with ``os`` calls, not ``open``: a text file object (its
    buffer, decoder and the locale's encoding) costs a forked wrapper a hundred page copies."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = _read(f"{PROC}/{pid}/stat")
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
        for line in _read(f"{PROC}/{pid}/status").splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
        return None
    return None


def read_owned(path: str | os.PathLike[str], owner: int, limit: int = 1 << 20, offset: int = 0) -> bytes | None:
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
    for name in os.listdir(PROC):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields and int(fields[2]) == pgid:
                out.append(int(name))
    return out


def find_by_argv(needle: str) -> int | None:
    """The pid whose command line contains the argument ``needle`` (the wrapper's attempt dir)."""
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{PROC}/{name}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if needle.encode() in args and state(int(name)) not in ("Z", "X", None):
            return int(name)
    return None


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """``text`` as the whole of ``path``, renamed into place (a reader sees the old or the new
    file, never half of one); ``os`` calls, not ``open``, for the reason :func:`_read` gives."""
    head, name = os.path.split(os.fspath(path))
    tmp = os.path.join(head, f".{name}.tmp-{os.getpid()}")
    data = text.encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)
    os.replace(tmp, path)
