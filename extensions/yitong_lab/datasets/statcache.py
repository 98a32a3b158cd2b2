"""The stat cache: ``(path, size, mtime_ns, inode) -> BLAKE3`` in SQLite, so an unchanged file
is only ``stat``-ed, never read again. A second table remembers, per directory tree, the sorted
``(path, size, mtime_ns, inode)`` list of its last commit and that manifest's hash: when a new
scan gives the same list, the manifest hash is known without building the manifest (the
no-op commit of 70,000 files only stats them). A third keeps the last few manifests committed
from this machine, so a commit on top of one of them sends only the changed entries.

File: ``$YITONG_CACHE_DIR/stat-<host>.sqlite`` (default ``~/.cache/yitong/``; per host because
inodes and mtimes are per machine even when the home directory is shared). Reads load a whole
directory tree in one query; writes go in one transaction.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

KEEP_MANIFESTS = 8


class Stat(NamedTuple):
    size: int
    mtime_ns: int
    inode: int


def cache_dir() -> Path:
    configured = os.environ.get("YITONG_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "yitong"


def default_path() -> Path:
    return cache_dir() / f"stat-{socket.gethostname() or 'localhost'}.sqlite"


class StatCache:
    """``StatCache(path=None)``; ``load(root)`` then ``store(rows)``. Use as a context manager."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS stat (path TEXT PRIMARY KEY, size INTEGER NOT NULL,"
            " mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, hash TEXT NOT NULL) WITHOUT ROWID"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS tree (root TEXT PRIMARY KEY, snapshot BLOB NOT NULL, manifest TEXT NOT NULL)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS manifest (id INTEGER PRIMARY KEY, hash TEXT UNIQUE NOT NULL,"
            " body BLOB NOT NULL)"
        )

    def load(self, root: str) -> dict[str, tuple[int, int, int, str]]:
        """Every entry under the absolute directory ``root``, keyed by the path relative to it:
        ``{relpath: (size, mtime_ns, inode, hash)}``."""
        low = root.rstrip(os.sep) + os.sep
        high = root.rstrip(os.sep) + chr(ord(os.sep) + 1)
        cut = len(low)
        rows = self._db.execute(
            "SELECT path, size, mtime_ns, inode, hash FROM stat WHERE path >= ? AND path < ?", (low, high)
        )
        return {row[0][cut:]: row[1:] for row in rows}

    def store(self, root: str, rows: Iterable[tuple[str, tuple[int, int, int], str]]) -> int:
        """Insert or replace ``(relpath, (size, mtime_ns, inode), hash)`` rows under ``root`` in one transaction."""
        low = root.rstrip(os.sep) + os.sep
        values = [(low + path, s[0], s[1], s[2], digest) for path, s, digest in rows]
        if values:
            with self._transaction():
                self._db.executemany("INSERT OR REPLACE INTO stat VALUES (?, ?, ?, ?, ?)", values)
        return len(values)

    def tree(self, root: str) -> tuple[bytes, str] | None:
        """``(snapshot, manifest hash)`` remembered for ``root``, or None."""
        row = self._db.execute("SELECT snapshot, manifest FROM tree WHERE root = ?", (root,)).fetchone()
        return (bytes(row[0]), row[1]) if row else None

    def remember_tree(self, root: str, snapshot: bytes, manifest: str) -> None:
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO tree VALUES (?, ?, ?)", (root, snapshot, manifest))

    def manifest(self, digest: str) -> dict | None:
        """A manifest committed from this machine (checked against its hash), or None."""
        import json
        import zlib

        from blake3 import blake3

        row = self._db.execute("SELECT body FROM manifest WHERE hash = ?", (digest,)).fetchone()
        if row is None:
            return None
        data = zlib.decompress(row[0])
        return json.loads(data) if blake3(data).hexdigest() == digest else None

    def remember_manifest(self, digest: str, data: bytes, keep: int = KEEP_MANIFESTS) -> None:
        """Keep the canonical bytes of a committed manifest (the newest ``keep``): the next commit
        on top of it sends only what changed."""
        import zlib

        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO manifest (hash, body) VALUES (?, ?)", (digest, zlib.compress(data, 1))
            )
            self._db.execute(
                "DELETE FROM manifest WHERE id NOT IN (SELECT id FROM manifest ORDER BY id DESC LIMIT ?)", (keep,)
            )

    def _transaction(self):
        from contextlib import contextmanager

        @contextmanager
        def transaction():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

        return transaction()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> StatCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NoCache:
    """Same interface, remembers nothing (staging directories of browser uploads)."""

    def load(self, root: str) -> dict[str, tuple[int, int, int, str]]:
        return {}

    def store(self, root: str, rows: Iterable[tuple[str, tuple[int, int, int], str]]) -> int:
        return 0

    def tree(self, root: str) -> tuple[bytes, str] | None:
        return None

    def remember_tree(self, root: str, snapshot: bytes, manifest: str) -> None:
        pass

    def manifest(self, digest: str) -> dict | None:
        return None

    def remember_manifest(self, digest: str, data: bytes, keep: int = 0) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> NoCache:
        return self

    def __exit__(self, *exc: object) -> None:
        pass
