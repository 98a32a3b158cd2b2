"""Files under ``<data_dir>/alerts``: the generated configs (written atomically) and two secrets."""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

import yaml


def write_atomic(path: Path, text: str, mode: int = 0o600) -> bool:
    """Write ``text`` to ``path`` through a temporary file and a rename; False when unchanged."""
    try:
        if path.read_text() == text:
            return False
    except OSError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def write_yaml(path: Path, data: dict[str, Any]) -> bool:
    header = "# written by the Yitong platform service (alerts/config.py): edits here are replaced\n"
    return write_atomic(path, header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def secret(path: Path) -> str:
    """A per-install secret, made once (0600)."""
    try:
        value = path.read_text().strip()
        if value:
            return value
    except OSError:
        pass
    value = secrets.token_hex(32)
    write_atomic(path, value)
    return value
