"""Garbage collection of the store: what no version's manifest reaches goes.

Phase 1 (one transaction under the storage lock): mark every hash named by a version's
manifest; drop index rows (and read grants) of other objects older than the grace period, and
pack rows no object uses any more. Phase 2 (under the lock again, after phase 1 committed, so an index row never
points at a deleted file): delete loose objects, packs and manifests nothing indexes or
references, temp files and upload partials older than the grace period, cache entries of
unindexed objects and materialised trees of unreferenced manifests. Then every VC's storage
charges are counted again (quota.py): what no version of the VC names any more stops counting
toward its storage quota. Blocking: call from a worker thread. A crash in phase 2 only leaves
orphans for the next run.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, select

from ..core.errors import Refusal
from ..vcs.storage import release_everywhere
from .manifest import CorruptManifest
from .materialize import remove_tree
from .models import DatasetVersion, Pack, StoredObject
from .objaccess import drop_grants
from .objindex import BATCH, storage_lock
from .objstore import TMP_MARK
from .quota import recount_all
from .storage import Storage


def reachable(storage: Storage, manifests: set[str]) -> set[str]:
    live: set[str] = set()
    for h in manifests:
        try:
            live.update(f["hash"] for f in storage.manifest(h)["files"])
        except (FileNotFoundError, CorruptManifest) as e:
            raise Refusal(409, f"garbage collection stopped: manifest {h} cannot be read ({e}); run verify") from e
    return live


def _mark_and_drop(storage: Storage, cutoff: datetime) -> dict[str, Any]:
    with storage_lock(storage.db) as s:
        manifests = set(s.scalars(select(DatasetVersion.manifest).distinct()))
        live = reachable(storage, manifests)
        dead = [
            (h, size)
            for h, size, created in s.execute(select(StoredObject.hash, StoredObject.size, StoredObject.created))
            if h not in live and created < cutoff
        ]
        for i in range(0, len(dead), BATCH):
            s.execute(delete(StoredObject).where(StoredObject.hash.in_([h for h, _ in dead[i : i + BATCH]])))
        drop_grants(s, [h for h, _ in dead])
        release_everywhere(s, [h for h, _ in dead])
        used = set(s.scalars(select(StoredObject.pack).where(StoredObject.pack.is_not(None)).distinct()))
        empty = [p for p in s.scalars(select(Pack.id)) if p not in used]
        if empty:
            s.execute(delete(Pack).where(Pack.id.in_(empty)))
    return {"objects": len(dead), "bytes": sum(size for _, size in dead), "manifests": manifests}


def _sweep(storage: Storage, manifests: set[str], cutoff: float) -> dict[str, int]:
    store = storage.store
    counts = {"packs": 0, "manifests": 0, "temp_files": 0}
    with storage_lock(storage.db) as s:
        loose = set(s.scalars(select(StoredObject.hash).where(StoredObject.pack.is_(None))))
        packs = set(s.scalars(select(Pack.id)))
        for prefix, alive, kind in (
            ("objects/", lambda name: name in loose, None),
            ("packs/", lambda name: name.removesuffix(".pack") in packs, "packs"),
            ("manifests/", lambda name: name.removesuffix(".json") in manifests, "manifests"),
        ):
            for key, _size, mtime in list(store.listing(prefix)):
                name = key.rsplit("/", 1)[-1]
                if TMP_MARK in name:
                    if mtime < cutoff:
                        store.delete(key)
                        counts["temp_files"] += 1
                elif not alive(name) and (mtime < cutoff or kind is None):
                    store.delete(key)
                    if kind:
                        counts[kind] += 1
        indexed = loose | set(s.scalars(select(StoredObject.hash)))
    for part in storage.spool.directory.rglob("*.part"):  # one folder per person
        if part.stat().st_mtime < cutoff:
            part.unlink(missing_ok=True)
            counts["temp_files"] += 1
    objects = storage.cache_dir / "objects"
    if objects.exists():
        for f in objects.glob("*/*"):
            if f.name.split(".")[0] not in indexed or (TMP_MARK in f.name and f.stat().st_mtime < cutoff):
                f.unlink(missing_ok=True)
    if storage.materialize_dir.exists():
        for tree in storage.materialize_dir.iterdir():
            if tree.name not in manifests and (not tree.name.startswith(".tmp-") or tree.stat().st_mtime < cutoff):
                remove_tree(tree)
    return counts


def collect(storage: Storage, grace: float | None = None) -> dict[str, int]:
    grace = storage.grace if grace is None else grace
    now = time.time()
    dropped = _mark_and_drop(storage, datetime.fromtimestamp(now, UTC) - timedelta(seconds=grace))
    counts = _sweep(storage, dropped["manifests"], now - grace)
    recount_all(storage, grace)
    return {"objects": dropped["objects"], "bytes": dropped["bytes"]} | counts
