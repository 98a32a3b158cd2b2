"""Serving object bytes, pure parts and generators: HTTP ``Range`` and pack streams for ``fetch``."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .objindex import Location
from .objstore import CHUNK
from .packs import record_header
from .storage import Storage

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``[start, end)`` of a single-range ``Range`` header; None for the whole object.

    ValueError when the range cannot be satisfied (416).
    """
    if not header:
        return None
    match = _RANGE.match(header.strip())
    if not match or (not match.group(1) and not match.group(2)):
        return None  # unsupported forms (several ranges) get the whole object
    first, last = match.groups()
    if not first:
        length = int(last)
        if length == 0:
            raise ValueError("empty suffix range")
        return max(0, size - length), size
    start = int(first)
    end = min(int(last) + 1, size) if last else size
    if start >= size or end <= start:
        raise ValueError(f"range {header} is outside the object's {size} bytes")
    return start, end


def records(storage: Storage, locs: list[Location]) -> Iterator[bytes]:
    """A pack stream of ``locs``, read in (pack, offset) order, each pack opened once."""
    ordered = sorted(locs, key=lambda loc: (loc.pack or "", loc.offset or 0, loc.hash))
    current: tuple[str | None, object] = (None, None)
    try:
        for loc in ordered:
            yield record_header(loc.hash, loc.size)
            if loc.pack is None:
                yield from storage.chunks(loc)
                continue
            if current[0] != loc.pack:
                if current[1] is not None:
                    current[1].close()  # type: ignore[attr-defined]
                key, _ = storage.key(loc)
                current = (loc.pack, storage.store.fs.open(storage.store.path(key), "rb"))
            f = current[1]
            f.seek(loc.offset or 0)  # type: ignore[attr-defined]
            left = loc.size
            while left > 0:
                data = f.read(min(CHUNK, left))  # type: ignore[attr-defined]
                if not data:
                    raise EOFError(f"pack {loc.pack} ends inside object {loc.hash}")
                left -= len(data)
                yield data
    finally:
        if current[1] is not None:
            current[1].close()  # type: ignore[attr-defined]
