"""The column names of a Parquet file from its footer, without pyarrow (pure).

A Parquet file ends with its metadata (Thrift compact protocol), a 4-byte little-endian length
and ``PAR1``. The service reads only that tail from the store to check a batch job's columns
before anything is queued, as it reads a CSV file's header line. Of the metadata only the
schema (field 2 of ``FileMetaData``: a flat list of ``SchemaElement``, the root first with its
number of children) is decoded; the rest is skipped. Top-level names are the columns (a nested
column is one name, as pandas reads it).
"""

from __future__ import annotations

MAGIC = b"PAR1"
TAIL = 8
MAX_FOOTER = 16 << 20  # a larger footer is refused, not read


class Malformed(ValueError):
    pass


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise Malformed("the footer ends early")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = value = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 70:
                raise Malformed("a number is too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        if self.pos + n > len(self.data):
            raise Malformed("a string runs past the footer")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > 32:
            raise Malformed("nested too deeply")
        if kind in (1, 2):  # booleans in a field header carry their value
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.pos += 8
        elif kind == 8:
            self.binary()
        elif kind in (9, 10):
            size, element = self.list_header()
            for _ in range(size):
                self.skip(element if element not in (1, 2) else 3, depth + 1)
        elif kind == 11:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4, depth + 1)
                    self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            for _field, ftype in self.fields():
                self.skip(ftype, depth + 1)
        else:
            raise Malformed(f"unknown Thrift type {kind}")

    def list_header(self) -> tuple[int, int]:
        head = self.byte()
        size = head >> 4
        if size == 15:
            size = self.varint()
        return size, head & 0x0F

    def fields(self):
        """(field id, type) of a struct's fields until its stop byte."""
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            yield last, kind


def footer_length(tail: bytes) -> int | None:
    """The metadata's length from a file's last 8 bytes (None: not a Parquet file)."""
    if len(tail) != TAIL or tail[4:] != MAGIC:
        return None
    return int.from_bytes(tail[:4], "little")


def _element(r: _Reader) -> tuple[str, int]:
    name, children = "", 0
    for field, kind in r.fields():
        if field == 4 and kind == 8:
            name = r.binary().decode("utf-8", "replace")
        elif field == 5 and kind == 5:
            children = r.zigzag()
        else:
            r.skip(kind)
    return name, children


def columns(metadata: bytes) -> list[str]:
    """The top-level column names in ``metadata`` (the footer without its 8-byte tail)."""
    r = _Reader(metadata)
    for field, kind in r.fields():
        if field != 2 or kind != 9:
            r.skip(kind)
            continue
        size, element = r.list_header()
        if element != 12 or size < 1:
            raise Malformed("the schema is not a list of elements")
        schema = [_element(r) for _ in range(size)]
        names, i = [], 1
        for _ in range(schema[0][1]):
            if i >= len(schema):
                raise Malformed("the schema has fewer elements than its root says")
            names.append(schema[i][0])
            i = _after(schema, i)
        return names
    raise Malformed("the footer has no schema")


def _after(schema: list[tuple[str, int]], i: int) -> int:
    """The index after element ``i`` and all its descendants."""
    pending = 1
    while pending:
        if i >= len(schema):
            raise Malformed("the schema has fewer elements than its groups say")
        pending += schema[i][1] - 1
        i += 1
    return i
