"""Resumable uploads of large objects (HEAD/PATCH with ``Upload-Offset`` / ``Upload-Length``).

Partials live in a local spool, ``<data_dir>/uploads/<h>.part``, whatever the store is: object
stores cannot append, and a local file can (each PATCH is fsync'ed before it answers, so the
offset it reports survives a crash). When the partial reaches ``Upload-Length`` it is hashed
(BLAKE3, memory-mapped, multi-threaded), moved into ``objects/<h[:2]>/<h>`` (a rename on a
local store, a streamed copy otherwise) and indexed. Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path

from blake3 import blake3

from .db import Database
from .errors import Refusal
from .objindex import index, storage_lock
from .store import Store, object_key


class Spool:
    def __init__(self, directory: Path, store: Store, db: Database) -> None:
        self.directory = directory
        self.store = store
        self.db = db
        directory.mkdir(parents=True, exist_ok=True)

    def part(self, h: str) -> Path:
        return self.directory / f"{h}.part"

    def offset(self, h: str) -> int:
        try:
            return self.part(h).stat().st_size
        except FileNotFoundError:
            return 0

    def check_offset(self, h: str, offset: int) -> None:
        have = self.offset(h)
        if offset != have:
            raise Refusal(
                409,
                f"upload of object {h}: the partial upload has {have} bytes, not {offset}; resume at Upload-Offset: {have}",
            )

    def open(self, h: str):  # type: ignore[no-untyped-def]
        return open(self.part(h), "ab")  # noqa: SIM115

    @staticmethod
    def write(f, data: bytes) -> None:  # type: ignore[no-untyped-def]
        f.write(data)

    @staticmethod
    def close(f, truncate_to: int | None = None) -> int:  # type: ignore[no-untyped-def]
        """fsync and close; ``truncate_to`` drops what this request appended. Returns the size."""
        f.flush()
        if truncate_to is not None:
            f.truncate(truncate_to)
        os.fsync(f.fileno())
        size = os.fstat(f.fileno()).st_size
        f.close()
        return size

    def finish(self, h: str, length: int) -> None:
        """Hash the complete partial; move it into the store and index it, or drop it (422)."""
        part = self.part(h)
        hasher = blake3(max_threads=blake3.AUTO)
        if length:
            hasher.update_mmap(part)
        got = hasher.hexdigest()
        if got != h:
            part.unlink(missing_ok=True)
            raise Refusal(422, f"upload of object {h}: the {length} bytes received have the BLAKE3 {got}; the partial upload was dropped")
        with storage_lock(self.db) as s:
            self.store.put_file(str(part), object_key(h))
            index(s, [{"hash": h, "size": length, "pack": None, "offset": None}])
