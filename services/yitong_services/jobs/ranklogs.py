"""Per-rank log files of one attempt, ``<attempt dir>/logs/rank-<r>.log``: the local and Slurm
runners write them the same way and read them back with these (blocking: call in a thread)."""

from __future__ import annotations

import os
import re
from pathlib import Path

CHUNK = 1 << 20
_NAME = re.compile(r"rank-(\d+)\.log")


def read(attempt_dir: Path, rank: int, offset: int = 0) -> bytes:
    """Up to 1 MiB of rank ``rank``'s log from ``offset`` (empty when there is none yet)."""
    try:
        with open(attempt_dir / "logs" / f"rank-{int(rank)}.log", "rb") as f:
            f.seek(offset)
            return f.read(CHUNK)
    except FileNotFoundError:
        return b""


def ranks(attempt_dir: Path) -> list[int]:
    logs = attempt_dir / "logs"
    names = os.listdir(logs) if logs.is_dir() else []
    return sorted(int(m.group(1)) for n in names if (m := _NAME.fullmatch(n)))
