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
        while view:
            if self._current is None:
                take = min(HEADER - len(self._header), len(view))
                self._header += view[:take]
                view = view[take:]
                self.position += take
                if len(self._header) == HEADER:
                    self._begin()
            else:
                take = min(self._left, len(view))
                assert self._hasher is not None
                self._hasher.update(view[:take])
                view = view[take:]
                self.position += take
                self._left -= take
                if self._left == 0:
                    self._end()

    def _begin(self) -> None:
        h = bytes(self._header[:32]).hex()
        (size,) = struct.unpack(">Q", self._header[32:])
        self._header.clear()
        if size > self.limit:
            raise PackError(f"object {h} of {size} bytes exceeds the upload limit of {self.limit} bytes", 413)
        self._current = Record(h, size, self.position)
        self._left = size
        self._hasher = blake3()
        if size == 0:
            self._end()

    def _end(self) -> None:
        assert self._current is not None and self._hasher is not None
        got = self._hasher.hexdigest()
        if got != self._current.hash:
            raise PackError(f"object {self._current.hash} in the pack has the BLAKE3 {got}: corrupt or mislabelled")
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
