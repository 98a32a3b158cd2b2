"""The pack record format, pure: ``<32-byte raw BLAKE3><8-byte big-endian size><bytes>``.

``PackReader`` takes a stream in arbitrary chunks and checks each record's hash as its bytes
go by (never holding a whole record); ``record_header`` builds the header for ``fetch``.
Stored packs use the same format, so an object's ``offset`` is where its bytes start.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from blake3 import blake3

HEADER = 40


class PackError(ValueError):
    """A malformed pack; ``status`` is the HTTP answer (422, or 413 for a record over the limit)."""

    def __init__(self, detail: str, status: int = 422) -> None:
        super().__init__(detail)
        self.status = status


def record_header(h: str, size: int) -> bytes:
    return bytes.fromhex(h) + struct.pack(">Q", size)


@dataclass
class Record:
    hash: str
    size: int
    offset: int  # of the bytes, in the stream


@dataclass
class PackReader:
    """Feed chunks; ``records`` collects every complete, verified record in stream order."""

    limit: int
    records: list[Record] = field(default_factory=list)
    position: int = 0
    _header: bytearray = field(default_factory=bytearray)
    _current: Record | None = None
    _left: int = 0
    _hasher: blake3 | None = None

    def feed(self, chunk: bytes | memoryview) -> None:
        view = memoryview(chunk)
        pos, end, base = 0, len(view), self.position
        while pos < end:
            if self._current is None and not self._header and end - pos >= HEADER:
                # A whole record inside this chunk (small files: nearly all of them) is checked
                # in one step, without the incremental state below.
                size = int.from_bytes(view[pos + 32 : pos + HEADER], "big")
                start = pos + HEADER
                if start + size <= end:
                    h = view[pos : pos + 32].hex()
                    self._check_size(h, size)
                    self._verify(h, blake3(view[start : start + size]).hexdigest())
                    self.records.append(Record(h, size, base + start))
                    pos = start + size
                    continue
            self.position = base + pos
            pos += self._step(view[pos:])
        self.position = base + end

    def _step(self, view: memoryview) -> int:
        """Take the next piece of a record that spans chunks; returns the bytes consumed."""
        if self._current is None:
            take = min(HEADER - len(self._header), len(view))
            self._header += view[:take]
            self.position += take
            if len(self._header) == HEADER:
                self._begin()
            return take
        take = min(self._left, len(view))
        assert self._hasher is not None
        self._hasher.update(view[:take])
        self.position += take
        self._left -= take
        if self._left == 0:
            self._end()
        return take

    def _check_size(self, h: str, size: int) -> None:
        if size > self.limit:
            raise PackError(f"object {h} of {size} bytes exceeds the upload limit of {self.limit} bytes", 413)

    @staticmethod
    def _verify(h: str, got: str) -> None:
        if got != h:
            raise PackError(f"object {h} in the pack has the BLAKE3 {got}: corrupt or mislabelled")

    def _begin(self) -> None:
        h = bytes(self._header[:32]).hex()
        (size,) = struct.unpack(">Q", self._header[32:])
        self._header.clear()
        self._check_size(h, size)
        self._current = Record(h, size, self.position)
        self._left = size
        self._hasher = blake3()
        if size == 0:
            self._end()

    def _end(self) -> None:
        assert self._current is not None and self._hasher is not None
        self._verify(self._current.hash, self._hasher.hexdigest())
        self.records.append(self._current)
        self._current = None
        self._hasher = None

    def finish(self) -> list[Record]:
        """The records; PackError when the stream stops inside a record."""
        if self._current is not None:
            raise PackError(
                f"the pack ends inside object {self._current.hash} ({self._left} of {self._current.size} bytes missing)"
            )
        if self._header:
            raise PackError(f"the pack ends inside a record header ({len(self._header)} of {HEADER} bytes)")
        return self.records
