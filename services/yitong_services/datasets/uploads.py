"""Resumable uploads of large objects (HEAD/PATCH with ``Upload-Offset`` / ``Upload-Length``).

Partials live in a local spool, ``<data_dir>/uploads/<person>/<h>.part``, whatever the store is
(one folder per person, ``<person>`` a hash of the name: an upload in progress, its offset and
its lock are nobody else's business, so ``HEAD`` never says that someone else sends those bytes): object
stores cannot append, and a local file can (each PATCH is fsync'ed before it answers, so the
offset it reports survives a crash). The bytes are hashed as they are appended (BLAKE3, one
incremental hasher per upload, kept in memory while the service runs), so when the partial
reaches ``Upload-Length`` its hash is known without reading it again; a partial this process
did not see from its first byte (a restart, a truncation) is hashed from disk instead
(memory-mapped, multi-threaded). Then it is moved into ``objects/<h[:2]>/<h>`` (a rename on a
local store, a streamed copy otherwise) and indexed, or dropped when the store has those bytes
already (the uploader sent and we checked all of them either way), and the uploader may read
it (objaccess.py). Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from blake3 import blake3
from sqlalchemy.orm import Session

from ..core.db import Database
from ..core.errors import Refusal
from .appender import Appender
from .objaccess import grant_upload
from .objindex import index, storage_lock, stored_sizes
from .objstore import Store, object_key

HASHERS = 64  # uploads whose running hash is kept (an abandoned one is dropped, oldest first)


class Spool:
    def __init__(self, directory: Path, store: Store, db: Database, owner: str | None = None) -> None:
        self.directory = directory
        self.store = store
        self.db = db
        self.owner = owner
        self._people: dict[str, Spool] = {}
        directory.mkdir(parents=True, exist_ok=True)
        # hash -> (hasher, (size, mtime_ns, inode) of the partial it has seen all of); one
        # writer per hash at a time
        self._hashers: OrderedDict[str, tuple[blake3, tuple[int, int, int]]] = OrderedDict()
        self._guard = threading.Lock()

    def _stat(self, h: str) -> tuple[int, int, int] | None:
        try:
            st = self.part(h).stat()
        except FileNotFoundError:
            return None
        return st.st_size, st.st_mtime_ns, st.st_ino

    def hasher(self, h: str, offset: int) -> blake3 | None:
        """The running hasher of the upload of ``h`` when it has seen all of the partial, which
        has ``offset`` bytes and has not been touched by anyone else since (same size, mtime and
        inode); a new one at 0; ``None`` when the partial must be hashed from disk."""
        with self._guard:
            kept = self._hashers.pop(h, None)
        if kept is not None and kept[1][0] == offset and kept[1] == self._stat(h):
            return kept[0]
        return blake3(max_threads=blake3.AUTO) if offset == 0 else None

    def keep(self, h: str, hasher: blake3 | None) -> None:
        """Remember ``hasher`` as having seen all of the partial of ``h`` as it is now."""
        stat = self._stat(h) if hasher is not None else None
        if stat is None or hasher is None:
            return
        with self._guard:
            self._hashers[h] = (hasher, stat)
            while len(self._hashers) > HASHERS:
                self._hashers.popitem(last=False)

    def person(self, name: str) -> Spool:
        """The spool of ``name``'s uploads: ``<directory>/<BLAKE3 of the name, 32 hex digits>``."""
        with self._guard:
            spool = self._people.get(name)
            if spool is None:
                tag = blake3(name.encode()).hexdigest()[:32]
                spool = self._people[name] = Spool(self.directory / tag, self.store, self.db, owner=name)
        return spool

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

    def open(self, h: str) -> Appender:
        return Appender(self.part(h))

    @staticmethod
    def write(f: Appender, data: bytes | bytearray | memoryview, hasher: blake3 | None = None) -> None:
        f.write(data)
        if hasher is not None:
            hasher.update(data)

    @staticmethod
    def close(f: Appender, truncate_to: int | None = None) -> int:
        """fsync and close; ``truncate_to`` drops what this request appended. Returns the size."""
        try:
            if truncate_to is not None:
                f.truncate(truncate_to)
            f.sync()
            return os.fstat(f.fd).st_size
        finally:
            f.close()

    def finish(
        self,
        h: str,
        length: int,
        hasher: blake3 | None = None,
        settle: Callable[[Session, dict[str, int]], None] | None = None,
    ) -> None:
        """Check the complete partial's hash (``hasher``: one that has seen all of it, else it
        is read again); move it into the store and index it, or drop it (422). ``settle(session,
        {h: length})`` runs under the storage lock first (the VC's storage quota, quota.py): a
        refusal there drops the partial and nothing reaches the store."""
        part = self.part(h)
        with self._guard:
            self._hashers.pop(h, None)
        if hasher is None:
            hasher = blake3(max_threads=blake3.AUTO)
            if length:
                hasher.update_mmap(part)
        got = hasher.hexdigest()
        if got != h:
            part.unlink(missing_ok=True)
            raise Refusal(
                422,
                f"upload of object {h}: the {length} bytes received have the BLAKE3 {got}; the partial upload was dropped",
            )
        with storage_lock(self.db) as s:
            if settle is not None:
                try:
                    settle(s, {h: length})
                except Exception:
                    part.unlink(missing_ok=True)
                    raise
            if stored_sizes(s, [h]):  # stored already (someone else's): these bytes are the same
                part.unlink(missing_ok=True)
                if self.owner is not None:
                    grant_upload(s, self.owner, [h])
            else:
                self.store.put_file(str(part), object_key(h))
                index(s, [{"hash": h, "size": length, "pack": None, "offset": None, "uploader": self.owner}])
