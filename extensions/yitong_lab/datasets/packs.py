"""The pack record format: ``<32-byte raw hash><8-byte big-endian size><bytes>``, repeated.

:func:`pack_body` streams files as one pack (a generator body for httpx: never a whole pack in
memory); :class:`PackDecoder` turns a received stream back into records, chunk by chunk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

HEADER = 40  # 32 bytes of hash + 8 bytes of size
BLOCK = 1 << 20
CHUNK = BLOCK  # pack bodies go out in blocks of at most this size


def header(hash_hex: str, size: int) -> bytes:
    """The 40-byte record header."""
    try:
        raw = bytes.fromhex(hash_hex)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ValueError(f"{hash_hex!r} is not a BLAKE3 hash (64 hex digits)")
    return raw + size.to_bytes(8, "big")


def encode(records: Iterable[tuple[str, bytes]]) -> bytes:
    """A whole pack in memory (tests and tiny packs): ``[(hash, data), ...]`` -> bytes."""
    return b"".join(header(h, len(data)) + data for h, data in records)


def _read_into(fd: int, view: memoryview) -> int:
    if hasattr(os, "readv"):
        return os.readv(fd, [view])
    data = os.read(fd, len(view))  # Windows
    view[: len(data)] = data
    return len(data)


class Item(NamedTuple):
    hash: str
    size: int
    path: str  # the local file that holds the bytes
    data: bytes | None = None  # the bytes themselves, when they were read already (hashing)


def body_length(items: Iterable[Item]) -> int:
    return sum(HEADER + item.size for item in items)


def pack_body(items: list[Item], sent: Callable[[int], None] | None = None, block: int = CHUNK) -> Iterator[bytes]:
    """Yield the pack of ``items`` in blocks of about ``block`` bytes (many small records per
    block: one socket write per block, not two per file); ``sent(n)`` after each block.

    Files are read straight into one preallocated buffer (``readv``), unless the item brings
    its bytes (read while hashing). A file whose size
    changed since it was hashed raises ``OSError`` (the upload then fails instead of sending a
    record the service would refuse).
    """
    if all(item.data is not None for item in items):  # read while hashing: no file is opened
        yield from _joined(items, sent, block)
        return
    buf = bytearray(block + HEADER)
    view = memoryview(buf)
    pos = 0
    for item in items:
        if pos + HEADER > block:
            yield bytes(view[:pos])
            if sent:
                sent(pos)
            pos = 0
        view[pos : pos + HEADER] = header(item.hash, item.size)
        pos += HEADER
        if item.data is not None:
            data = memoryview(item.data)
            if len(data) != item.size:
                raise OSError(f"{item.path}: {len(data)} bytes in hand for a record of {item.size}")
            while data:
                if pos == block:
                    yield bytes(view[:pos])
                    if sent:
                        sent(pos)
                    pos = 0
                take = min(block - pos, len(data))
                view[pos : pos + take] = data[:take]
                pos += take
                data = data[take:]
            continue
        left = item.size
        fd = os.open(
            item.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        )  # no file object: 70k of them cost
        try:
            while left:
                room = min(left, block - pos)
                if room == 0:
                    yield bytes(view[:pos])
                    if sent:
                        sent(pos)
                    pos = 0
                    continue
                n = _read_into(fd, view[pos : pos + room])
                if not n:
                    break
                pos += n
                left -= n
        finally:
            os.close(fd)
        if left:
            raise OSError(f"{item.path} changed while it was being uploaded: commit again")
    if pos:
        yield bytes(view[:pos])
        if sent:
            sent(pos)


def _joined(items: list[Item], sent: Callable[[int], None] | None, block: int) -> Iterator[bytes]:
    """:func:`pack_body` of items that bring their bytes: headers and bytes joined once per
    block of at most ``block`` bytes (two list appends per small file; a record that does not
    fit the block's room is cut, as a view)."""
    parts: list[bytes | memoryview] = []
    pending = 0
    for item in items:
        data = item.data
        assert data is not None
        if len(data) != item.size:
            raise OSError(f"{item.path}: {len(data)} bytes in hand for a record of {item.size}")
        for piece in (header(item.hash, item.size), data):
            if len(piece) <= block - pending:
                parts.append(piece)
                pending += len(piece)
                continue
            view = memoryview(piece)
            while view:
                take = min(block - pending, len(view))
                parts.append(view[:take])
                pending += take
                view = view[take:]
                if pending == block:
                    yield b"".join(parts)
                    if sent:
                        sent(pending)
                    parts, pending = [], 0
    if parts:
        yield b"".join(parts)
        if sent:
            sent(pending)


class Record(NamedTuple):
    """One event of :class:`PackDecoder`: bytes ``data`` of the record ``hash`` (``size`` bytes
    in all); ``end`` is true on the record's last event (an empty record has one event)."""

    hash: str
    size: int
    data: bytes
    end: bool


class PackDecoder:
    """Incremental decoder: ``feed(chunk)`` yields :class:`Record` events; ``close()`` checks
    that the stream did not stop inside a record."""

    def __init__(self) -> None:
        self._buffer = b""
        self._hash: str | None = None
        self._size = 0
        self._left = 0

    def feed(self, chunk: bytes) -> Iterator[Record]:
        view = self._buffer + chunk if self._buffer else chunk
        self._buffer = b""
        pos = 0
        while pos < len(view):
            if self._hash is None:
                if len(view) - pos < HEADER:
                    self._buffer = bytes(view[pos:])
                    return
                self._hash = bytes(view[pos : pos + 32]).hex()
                self._size = self._left = int.from_bytes(view[pos + 32 : pos + HEADER], "big")
                pos += HEADER
                if self._left == 0:
                    yield Record(self._hash, 0, b"", True)
                    self._hash = None
                continue
            take = min(self._left, len(view) - pos)
            self._left -= take
            data = bytes(view[pos : pos + take])
            pos += take
            yield Record(self._hash, self._size, data, self._left == 0)
            if self._left == 0:
                self._hash = None

    def close(self) -> None:
        if self._hash is not None or self._buffer:
            raise ValueError("the pack stream ended inside a record")


def decode(data: bytes) -> list[tuple[str, bytes]]:
    """A whole pack -> ``[(hash, data), ...]`` (tests)."""
    decoder, out, parts = PackDecoder(), [], []
    for record in decoder.feed(data):
        parts.append(record.data)
        if record.end:
            out.append((record.hash, b"".join(parts)))
            parts = []
    decoder.close()
    return out
