"""Appending large uploads to a local file, around the page cache where the system allows.

A multi-gigabyte upload written through the page cache costs the service a copy into freshly
allocated cache pages and evicts what readers had cached, for data nobody reads back soon (it
is hashed as it arrives). :class:`Appender` writes whole, aligned blocks with ``O_DIRECT``
(Linux; the same choice MinIO makes for object data) and everything else — a resumed upload's
unaligned start, the short last block, a filesystem that refuses ``O_DIRECT`` (tmpfs,
some network filesystems) — through an ordinary descriptor with early writeback.

Blocks qualify for the direct path when the file position, their length and their address are
multiples of :data:`ALIGN`; :func:`aligned_buffer` gives buffers whose slices at multiples of
``ALIGN`` do. Blocking: call from a worker thread.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading

from .objstore import start_writeback

ALIGN = 4096  # covers 512-byte and 4 KiB logical blocks
_DIRECT = getattr(os, "O_DIRECT", 0)


def aligned_buffer(size: int) -> memoryview:
    """A writable, page-aligned buffer of ``size`` bytes (anonymous memory map)."""
    return memoryview(mmap.mmap(-1, size))


def _address(view: memoryview) -> int | None:
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(view))
    except (TypeError, ValueError):  # read-only or empty: not for the direct path
        return None


class Appender:
    """``write`` appends at the end of ``path`` (created when missing); ``sync``, ``truncate``,
    ``close``. ``direct_bytes`` counts what went around the page cache."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        self.position = os.fstat(self.fd).st_size
        self.direct_bytes = 0
        self._direct: int | None = None
        if _DIRECT:
            try:
                self._direct = os.open(self.path, os.O_WRONLY | _DIRECT | getattr(os, "O_CLOEXEC", 0))
            except OSError:  # the filesystem does not do O_DIRECT
                self._direct = None

    def _fits_direct(self, view: memoryview) -> bool:
        if self._direct is None or self.position % ALIGN or len(view) % ALIGN or not len(view):
            return False
        address = _address(view)
        return address is not None and address % ALIGN == 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        start = self.position
        if self._fits_direct(view):
            try:
                self._write_all(self._direct, view)  # type: ignore[arg-type]
                self.direct_bytes += len(view)
                return
            except OSError:  # EINVAL and friends: this file will not do it after all
                os.close(self._direct)  # type: ignore[arg-type]
                self._direct = None
        self._write_all(self.fd, view[self.position - start :])
        start_writeback(self.fd, start, len(view))

    def _write_all(self, fd: int, view: memoryview) -> None:
        done = 0
        while done < len(view):
            n = os.pwrite(fd, view[done:], self.position)
            done += n
            self.position += n

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fd, size)
        self.position = size

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        if self._direct is not None:
            os.close(self._direct)
            self._direct = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BufferPool:
    """Aligned buffers of one size, reused across requests: fresh anonymous memory is faulted
    in page by page, which an upload of 128 MiB pieces would otherwise pay on every piece."""

    def __init__(self, size: int, keep: int = 8) -> None:
        self.size = size
        self.keep = keep
        self._free: list[memoryview] = []
        self._guard = threading.Lock()

    def take(self, n: int) -> list[memoryview]:
        with self._guard:
            got = [self._free.pop() for _ in range(min(n, len(self._free)))]
        return got + [aligned_buffer(self.size) for _ in range(n - len(got))]

    def give(self, buffers: list[memoryview]) -> None:
        with self._guard:
            room = max(0, self.keep - len(self._free))
            self._free.extend(buffers[:room])
