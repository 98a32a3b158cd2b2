"""Cluster and node logs: the platform's log files, searched newest first with bounded reads.

Files live under ``<data_dir>/logs``: ``<name>.log`` (and its rotations ``<name>.log.1`` ...)
are cluster logs (``hub``, ``yitong-service``, ...); ``nodes/<node>/<name>.log`` are node logs.
A search reads files backwards in blocks and stops after ``budget`` bytes, so no file is ever
read whole into memory. Lines start like the hub's and the service's log lines,
``[I 2026-11-25 21:00:00.123 JupyterHub app:3000] text`` or ``[INFO 2026-11-25 21:00:00,123 name] text``,
or are logfmt with ``ts=`` and ``level=`` (Prometheus, Alertmanager, the node exporter);
other lines (tracebacks) belong to the entry above them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
_LETTER = {"D": "debug", "I": "info", "W": "warning", "E": "error", "C": "critical"}
_HEADER = re.compile(r"^\[(?P<level>[A-Z]+) (?P<at>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)")
# logfmt, as Prometheus, Alertmanager and the node exporter write: ts=... (or time=...) ... level=...
_LOGFMT = re.compile(r"^(?:ts|time)=\"?(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\S*\s.*?\blevel=\"?(?P<level>[A-Za-z]+)")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
BLOCK = 64 * 1024
MAX_ENTRY = 8192  # characters of one entry (a long traceback is cut)


@dataclass(frozen=True)
class Entry:
    source: str
    at: datetime | None
    level: str
    text: str


def parse_header(line: str) -> tuple[str, datetime] | None:
    """``("info", datetime(...))`` for a line that starts an entry, else None."""
    m = _HEADER.match(line) or _LOGFMT.match(line)
    if not m:
        return None
    raw = m.group("level")
    level = _LETTER.get(raw) if len(raw) == 1 else raw.lower()
    if level == "warn":
        level = "warning"
    if level not in LEVELS:
        return None
    return level, datetime.fromisoformat(m.group("at").replace(" ", "T"))


def sources(logs_dir: Path) -> dict[str, list[str]]:
    """``{"cluster": ["hub", "yitong-service"], "node": ["host1/agent"]}`` from the files present."""
    cluster = sorted({p.name.split(".log")[0] for p in logs_dir.glob("*.log*") if _is_log(p)})
    node = sorted({f"{p.parent.name}/{p.name.split('.log')[0]}" for p in logs_dir.glob("nodes/*/*.log*") if _is_log(p)})
    return {"cluster": cluster, "node": node}


def _is_log(p: Path) -> bool:
    return p.is_file() and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.log(\.\d+)?", p.name) is not None


def files_of(logs_dir: Path, source: str) -> list[Path]:
    """A source's files newest first (``x.log``, ``x.log.1``, ...); ValueError for a bad name."""
    parts = source.split("/")
    if len(parts) > 2 or not all(_NAME.match(p) for p in parts):
        raise ValueError(f"{source!r} is not a log source: use a name like hub or <node>/<name>")
    base = logs_dir / "nodes" / parts[0] if len(parts) == 2 else logs_dir
    name = parts[-1]
    rotated = sorted(
        (p for p in base.glob(f"{name}.log.*") if p.name[len(name) + 5 :].isdigit()),
        key=lambda p: int(p.name[len(name) + 5 :]),
    )
    head = base / f"{name}.log"
    return ([head] if head.is_file() else []) + [p for p in rotated if p.is_file()]


def lines_backwards(path: Path, budget: list[int]) -> Iterator[str]:
    """The lines of ``path`` last first, reading blocks from the end while ``budget[0]`` lasts."""
    try:
        f = open(path, "rb")
    except OSError:
        return
    try:
        pos = os.fstat(f.fileno()).st_size
        rest = b""
        while pos > 0 and budget[0] > 0:
            size = min(BLOCK, pos, budget[0])
            pos -= size
            budget[0] -= size
            f.seek(pos)
            chunk = f.read(size) + rest
            parts = chunk.split(b"\n")
            rest = parts[0]
            for raw in reversed(parts[1:]):
                if raw:
                    yield raw.decode("utf-8", "replace")
            if len(rest) > MAX_ENTRY * 4:  # a line without end: keep its tail only
                rest = rest[-MAX_ENTRY:]
        if rest and pos == 0:
            yield rest.decode("utf-8", "replace")
    finally:
        f.close()


def entries(source: str, files: list[Path], budget: list[int]) -> Iterator[Entry]:
    """Entries of one source, newest first (continuation lines joined to their header)."""
    tail: list[str] = []
    for path in files:
        for line in lines_backwards(path, budget):
            head = parse_header(line)
            if head is None:
                tail.append(line)
                continue
            text = "\n".join([line, *reversed(tail)])[:MAX_ENTRY]
            tail = []
            yield Entry(source, head[1], head[0], text)
    if tail:
        yield Entry(source, None, "info", "\n".join(reversed(tail))[:MAX_ENTRY])


def search(
    logs_dir: Path,
    names: list[str],
    *,
    level: str = "debug",
    since: datetime | None = None,
    until: datetime | None = None,
    text: str = "",
    limit: int = 200,
    scan_bytes: int = 16 * 2**20,
) -> tuple[list[Entry], int, bool]:
    """Matching entries of ``names`` newest first, at most ``limit``; ``(entries, bytes read,
    truncated)``, truncated when the byte budget ran out before the files did."""
    floor = LEVELS[level]
    needle = text.lower()
    found: list[Entry] = []
    scanned = 0
    truncated = False
    share = max(BLOCK, scan_bytes // max(1, len(names)))
    for name in names:
        files = files_of(logs_dir, name)
        budget = [share]
        kept = 0
        for e in entries(name, files, budget):
            if e.at is not None and since is not None and e.at < since:
                break  # older from here on
            if e.at is not None and until is not None and e.at > until:
                continue
            if LEVELS[e.level] < floor or (needle and needle not in e.text.lower()):
                continue
            found.append(e)
            kept += 1
            if kept >= limit:
                break
        scanned += share - budget[0]
        if budget[0] <= 0:
            truncated = True
    found.sort(key=lambda e: e.at or datetime.min, reverse=True)
    return found[:limit], scanned, truncated
