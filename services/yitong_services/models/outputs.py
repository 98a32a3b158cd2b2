"""A finished job's outputs into the content-addressed store (I/O; call from a worker thread).

The outputs directory belongs to the job, which is hostile: every component of the chosen path
is checked not to be a link, the walk never descends into a linked directory, and every file is
opened without following one (``O_NOFOLLOW``), so the platform never copies a file the job could
not have read itself. Each file is copied into the registering person's upload spool while it is
hashed, then checked and moved into the store like a finished upload (datasets/uploads.py), so
the person may use those objects in a commit (datasets/objaccess.py).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from blake3 import blake3

from ..core.errors import Refusal
from ..datasets.manifest import path_refusal
from ..datasets.uploads import Spool

MAX_FILES = 10_000
CHUNK = 1 << 20


def _chosen(outputs: Path, path: str, job_id: int) -> Path:
    """``outputs/path``, refused when any component (the outputs directory too) is a link."""
    path = path.strip("/")
    if path:
        refused = path_refusal(path)
        if refused:
            raise Refusal(422, f"path: {refused}")
    shown = path or "(outputs)"
    cursor = outputs
    for part in ["", *path.split("/")] if path else [""]:
        cursor = cursor / part if part else cursor
        try:
            st = os.lstat(cursor)
        except FileNotFoundError:
            raise Refusal(404, f"job {job_id} has no output {shown}") from None
        if stat.S_ISLNK(st.st_mode):
            raise Refusal(422, f"job {job_id}: output {shown} goes through a link; links are not followed")
    return cursor


def _files(root: Path) -> list[tuple[Path, str]]:
    if not root.is_dir():
        return [(root, root.name)]
    out: list[tuple[Path, str]] = []
    for here, dirs, files in os.walk(root):  # never descends into linked directories
        dirs.sort()
        for name in sorted(files):
            p = Path(here) / name
            out.append((p, p.relative_to(root).as_posix()))
    return out


def _ingest_one(spool: Spool, p: Path, limit: int) -> dict | None:
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None  # a link, or gone
    tmp = spool.directory / f".tmp-{secrets.token_hex(8)}"
    hasher = blake3()
    size = 0
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        with open(tmp, "wb") as out:
            while chunk := f.read(CHUNK):
                size += len(chunk)
                if size > limit:
                    out.close()
                    tmp.unlink(missing_ok=True)
                    raise Refusal(413, f"output {p.name} is over the {limit}-byte limit (storage.max_upload_bytes)")
                hasher.update(chunk)
                out.write(chunk)
    h = hasher.hexdigest()
    os.replace(tmp, spool.part(h))
    spool.finish(h, size, hasher)
    return {"path": "", "size": size, "hash": h}


def ingest(spool: Spool, outputs: Path, path: str, job_id: int, limit: int) -> list[dict]:
    """Manifest entries (path relative to ``path``, size, hash) of the files under
    ``outputs/path``, each now in the store and readable by ``spool``'s owner."""
    root = _chosen(outputs, path, job_id)
    found = _files(root)
    if len(found) > MAX_FILES:
        raise Refusal(413, f"job {job_id}: {len(found)} files under {path or '(outputs)'}; at most {MAX_FILES}")
    entries = []
    for p, rel in found:
        entry = _ingest_one(spool, p, limit)
        if entry is not None:
            entries.append(entry | {"path": rel})
    if not entries:
        raise Refusal(422, f"job {job_id}: no regular files under {path or '(outputs)'}")
    return entries
