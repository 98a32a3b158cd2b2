"""The content-addressed store behind fsspec: keys, atomic writes, ranged reads, listings.

Blocking I/O throughout: call it from a worker thread. Every write goes to
``<key>.tmp-<uuid>`` and is renamed into place, so a reader never sees half a file (on a local
directory the temp file is fsync'ed first). Layout: ``objects/<h[:2]>/<h>``,
``packs/<id>.pack``, ``manifests/<h[:2]>/<h>.json``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

CHUNK = 1 << 20
TMP_MARK = ".tmp-"


def _sync_file_range():  # type: ignore[no-untyped-def]
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.sync_file_range
        fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
        fn.restype = ctypes.c_int
        return fn
    except (OSError, AttributeError):  # not Linux: the final fsync does all the work
        return None


_SYNC_FILE_RANGE = _sync_file_range()
_SYNC_FILE_RANGE_WRITE = 2


def start_writeback(fd: int, offset: int, size: int) -> None:
    """Start writing ``[offset, offset + size)`` of a local file to disk without waiting
    (Linux ``sync_file_range``): the disk works while the next bytes arrive, so the ``fsync``
    that makes the file durable waits for the tail only, not for all of it."""
    if _SYNC_FILE_RANGE is not None and size > 0:
        _SYNC_FILE_RANGE(fd, offset, size, _SYNC_FILE_RANGE_WRITE)


def object_key(h: str) -> str:
    return f"objects/{h[:2]}/{h}"


def pack_key(pack_id: str) -> str:
    return f"packs/{pack_id}.pack"


def manifest_key(h: str) -> str:
    return f"manifests/{h[:2]}/{h}.json"


def _mtime(info: dict[str, Any]) -> float:
    for name in ("mtime", "LastModified", "last_modified", "created"):
        value = info.get(name)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, (int, float)):
            return float(value)
    return 0.0


class Store:
    """One fsspec filesystem and a root under it (``file:///srv/store``, ``s3://bucket/prefix``)."""

    def __init__(self, url: str, options: dict[str, Any] | None = None) -> None:
        self.url = url
        options = dict(options or {})
        if not url.startswith(("file:", "/")):
            options.setdefault("use_listings_cache", False)  # other writers change the store
        self.fs, root = fsspec.core.url_to_fs(url, **options)
        self.root = root.rstrip("/")
        self.local = isinstance(self.fs, LocalFileSystem)
        if self.local:
            os.makedirs(self.root, exist_ok=True)

    def path(self, key: str) -> str:
        return f"{self.root}/{key}"

    def exists(self, key: str) -> bool:
        if self.local:
            return os.path.exists(self.path(key))
        try:
            self.fs.info(self.path(key))
            return True
        except FileNotFoundError:
            return False

    @contextlib.contextmanager
    def writer(self, key: str) -> Iterator[IO[bytes]]:
        """A file to write ``key`` through; renamed into place only when the block succeeds."""
        final = self.path(key)
        tmp = f"{final}{TMP_MARK}{uuid.uuid4().hex}"
        if self.local:
            os.makedirs(os.path.dirname(final), exist_ok=True)
            f: IO[bytes] = open(tmp, "wb")
        else:
            f = self.fs.open(tmp, "wb")
        try:
            yield f
            if self.local:
                f.flush()
                os.fsync(f.fileno())
            f.close()
            self.rename(tmp, final)
        except BaseException:
            with contextlib.suppress(Exception):
                f.close()
            with contextlib.suppress(Exception):
                self.fs.rm_file(tmp)
            raise

    def rename(self, src: str, dst: str) -> None:
        """Full paths; atomic on a local directory, copy-then-delete on object stores."""
        if self.local:
            os.replace(src, dst)
        else:
            self.fs.mv(src, dst)

    def write_bytes(self, key: str, data: bytes) -> None:
        with self.writer(key) as f:
            f.write(data)

    def put_file(self, local_path: str, key: str) -> None:
        """Move a finished local file (the upload spool) into the store."""
        final = self.path(key)
        if self.local:
            os.makedirs(os.path.dirname(final), exist_ok=True)
            try:
                os.replace(local_path, final)
                return
            except OSError:
                pass  # another filesystem: copy
        with open(local_path, "rb") as src, self.writer(key) as dst:
            while chunk := src.read(CHUNK):
                dst.write(chunk)
        os.unlink(local_path)

    def read_bytes(self, key: str) -> bytes:
        return self.fs.cat_file(self.path(key))

    def read_range(self, key: str, offset: int, size: int, chunk: int = CHUNK) -> Iterator[bytes]:
        """``size`` bytes from ``offset``, in chunks; FileNotFoundError when absent."""
        with self.fs.open(self.path(key), "rb") as f:
            f.seek(offset)
            left = size
            while left > 0:
                data = f.read(min(chunk, left))
                if not data:
                    raise EOFError(f"{key} ends {left} bytes early")
                left -= len(data)
                yield data

    def size(self, key: str) -> int:
        return int(self.fs.size(self.path(key)))

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self.path(key))

    def listing(self, prefix: str) -> Iterator[tuple[str, int, float]]:
        """(key, size, mtime) of every file under ``prefix`` (temp files included)."""
        base = self.path(prefix)
        if not self.fs.exists(base):
            return
        for path, info in self.fs.find(base, detail=True).items():
            key = path[len(self.root) + 1 :] if path.startswith(self.root + "/") else path
            yield key, int(info.get("size") or 0), _mtime(info)
