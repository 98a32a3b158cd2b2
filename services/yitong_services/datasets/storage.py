"""The dataset storage of one service: the store, the upload spool, manifests and object reads.

Built once by ``create_app`` (``Context.storage``), which also grants datasets the objects of
versions committed before object grants existed (``objaccess.backfill``). Blocking: call from a
worker thread.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from blake3 import blake3

from ..core.db import Database
from ..core.settings import Settings
from .manifest import CorruptManifest, encode
from .objindex import Location
from .objstore import Store, manifest_key, object_key, pack_key
from .uploads import Spool

MANIFEST_CACHE = 16


class Storage:
    def __init__(self, settings: Settings, db: Database) -> None:
        cfg = settings.storage
        self.db = db
        self.store = Store(settings.storage_url, cfg.options)
        self.limit = cfg.max_upload_bytes
        self.pack_threshold = cfg.pack_threshold
        self.grace = cfg.gc_grace
        self.spool = Spool(settings.data_dir.absolute() / "uploads", self.store, db)
        self.cache_dir = settings.cache_dir
        self.materialize_dir = settings.materialize_dir
        self._manifests: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._guard = threading.Lock()
        from .objaccess import backfill

        backfill(self)

    def put_manifest(self, manifest: dict[str, Any] | bytes, h: str) -> None:
        """Store a manifest (or its canonical bytes) under its hash, unless it is there."""
        key = manifest_key(h)
        if not self.store.exists(key):
            self.store.write_bytes(key, manifest if isinstance(manifest, bytes) else encode(manifest))

    def manifest(self, h: str, cached: bool = True) -> dict[str, Any]:
        """A version's manifest (immutable, so cached); checked against its hash when read."""
        with self._guard:
            if cached and h in self._manifests:
                self._manifests.move_to_end(h)
                return self._manifests[h]
        data = self.store.read_bytes(manifest_key(h))
        if blake3(data).hexdigest() != h:
            raise CorruptManifest(f"manifest {h} in the store is corrupt")
        manifest = json.loads(data)
        with self._guard:
            self._manifests[h] = manifest
            while len(self._manifests) > MANIFEST_CACHE:
                self._manifests.popitem(last=False)
        return manifest

    @staticmethod
    def key(loc: Location) -> tuple[str, int]:
        """(store key, offset of the object's first byte)."""
        if loc.pack is None:
            return object_key(loc.hash), 0
        return pack_key(loc.pack), int(loc.offset or 0)

    def chunks(self, loc: Location, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """Bytes ``[start, end)`` of an object, streamed."""
        end = loc.size if end is None else end
        key, base = self.key(loc)
        if end <= start:
            return iter(())
        return self.store.read_range(key, base + start, end - start)

    def rehash(self, loc: Location) -> str:
        hasher = blake3()
        for chunk in self.chunks(loc):
            hasher.update(chunk)
        return hasher.hexdigest()
