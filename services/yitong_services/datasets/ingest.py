"""Pack uploads: stream records into a new pack, check every hash, then index in one transaction.

Blocking: ``feed`` and ``commit`` run in a worker thread. The pack is written to a temp key as
the body arrives and renamed into ``packs/<id>.pack`` only when every record checked out;
objects already indexed (or repeated in the pack) are validated but not indexed again, and a
pack with nothing new is dropped. Every object of the pack becomes readable by its uploader
(objaccess.py), and the answer counts them all: it never tells which were stored before. A
crash before the index transaction leaves an orphan pack that GC removes.

A pack for a VC with a storage quota (quota.py) is bounded as it streams: past ``room`` bytes
(what the VC may still add) it is refused with 413 and its temp file removed; indexed, the VC
is charged for its objects under the storage lock (``settle``), or the pack is removed again.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from ..core.db import Database
from .objaccess import grant_upload
from .objindex import index_rows, storage_lock
from .objstore import Store, pack_key, start_writeback
from .packs import PackError, PackReader

WRITEBACK = 8 << 20  # start writing a local pack to disk every this many bytes


def too_big(what: str, size: int, limit: int) -> str:
    return f"{what} of {human(size)} exceeds the {human(limit)} limit (storage.max_upload_bytes)"


def human(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.3g} {unit}"
        value /= 1024
    return f"{size} bytes"  # pragma: no cover


class PackIngest:
    """One pack upload in progress."""

    def __init__(
        self,
        store: Store,
        db: Database,
        limit: int,
        uploader: str,
        room: int | None = None,
        settle: Callable[[Session, dict[str, int]], None] | None = None,
        over: Callable[[int], str] | None = None,
    ) -> None:
        self.store = store
        self.db = db
        self.limit = limit
        self.uploader = uploader
        self.room = room  # bytes the VC may still add (None: no storage quota)
        self.settle = settle
        self.over = over  # the 413 sentence for ``received`` bytes past ``room``
        self.reader = PackReader(limit)
        self.pack_id = secrets.token_hex(16)
        self.received = 0
        self._writer = store.writer(pack_key(self.pack_id))
        self._file = self._writer.__enter__()
        self._open = True
        self._synced = 0  # bytes handed to the disk so far (local stores)

    def feed(self, chunk: bytes) -> None:
        self.received += len(chunk)
        if self.received > self.limit:
            raise PackError(too_big("the pack upload", self.received, self.limit), 413)
        if self.room is not None and self.received > self.room:
            raise PackError(self.over(self.received) if self.over else "the pack exceeds the storage quota", 413)
        self.reader.feed(chunk)
        self._file.write(chunk)
        if self.store.local and self.received - self._synced >= WRITEBACK:
            self._file.flush()
            start_writeback(self._file.fileno(), self._synced, self.received - self._synced)
            self._synced = self.received

    def abort(self, exc: BaseException | None = None) -> None:
        if self._open:
            self._open = False
            error = exc or PackError("aborted")
            self._writer.__exit__(type(error), error, None)

    def commit(self) -> dict[str, Any]:
        try:
            records = self.reader.finish()
        except PackError as e:
            self.abort(e)
            raise
        self._open = False
        self._writer.__exit__(None, None, None)  # rename into place
        # The client asked which objects are missing just before: nearly always all of them
        # are new, so the pack goes into place first and is indexed once, under the lock.
        pack, uploader = self.pack_id, self.uploader
        rows = [(r.hash, r.size, pack, r.offset, uploader) for r in records]
        try:
            with storage_lock(self.db) as s:
                if self.settle is not None:
                    self.settle(s, {r.hash: r.size for r in records})
                stored = index_rows(s, rows, pack=(pack, self.received))
                if len(stored) < len(rows):  # the new ones name their uploader already
                    fresh = set(stored)
                    grant_upload(s, uploader, [r[0] for r in rows if r[0] not in fresh])
        except Exception:
            self.store.delete(pack_key(self.pack_id))  # refused (or failed): nothing of it was indexed
            raise
        if not stored:  # another upload had it all: drop the copy (GC would, later)
            self.store.delete(pack_key(self.pack_id))
        sizes = {r.hash: r.size for r in records}
        return {"stored": len(sizes), "bytes": sum(sizes.values())}
