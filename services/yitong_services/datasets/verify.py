"""Verify the store: rehash every indexed object (loose and packed) and every version's manifest.

``corrupt``: bytes whose BLAKE3 is not their name; ``missing``: indexed objects (or manifests,
or objects a manifest names) that the store or the index lacks; ``cache_corrupt``: objects of
the local materialise cache (``<cache>/objects``, hardlinked into the read-only trees jobs
read) whose bytes were changed in place. Everything is read and hashed again on every run:
nothing trusts a size, a timestamp or an earlier answer. Packs are read once each, in offset
order. Blocking: call from a worker thread.
"""

from __future__ import annotations

from collections import defaultdict

from blake3 import blake3
from sqlalchemy import select

from .manifest import CorruptManifest, hashes
from .models import DatasetVersion, StoredObject
from .objindex import Location
from .objstore import CHUNK, TMP_MARK, object_key, pack_key
from .storage import Storage


def _check_pack(storage: Storage, pack: str, locs: list[Location], corrupt: list[str], missing: list[str]) -> None:
    try:
        f = storage.store.fs.open(storage.store.path(pack_key(pack)), "rb")
    except FileNotFoundError:
        missing.extend(loc.hash for loc in locs)
        return
    with f:
        for loc in sorted(locs, key=lambda x: x.offset or 0):
            f.seek(loc.offset or 0)
            hasher = blake3()
            left = loc.size
            while left > 0:
                data = f.read(min(CHUNK, left))
                if not data:
                    break
                hasher.update(data)
                left -= len(data)
            if left:
                missing.append(loc.hash)
            elif hasher.hexdigest() != loc.hash:
                corrupt.append(loc.hash)


def _check_cache(storage: Storage) -> list[str]:
    """Hashes whose cached bytes are not theirs any more."""
    objects = storage.cache_dir / "objects"
    changed = []
    for f in sorted(objects.glob("*/*")) if objects.exists() else []:
        if TMP_MARK in f.name or not f.is_file():
            continue
        hasher = blake3(max_threads=blake3.AUTO)
        try:
            if f.stat().st_size:
                hasher.update_mmap(f)
        except OSError:
            changed.append(f.name)
            continue
        if hasher.hexdigest() != f.name:
            changed.append(f.name)
    return changed


def verify(storage: Storage) -> dict:
    corrupt: list[str] = []
    missing: list[str] = []
    with storage.db.session() as s:
        rows = [
            Location(*r)
            for r in s.execute(select(StoredObject.hash, StoredObject.size, StoredObject.pack, StoredObject.offset))
        ]
        manifests = set(s.scalars(select(DatasetVersion.manifest).distinct()))
    by_pack: dict[str, list[Location]] = defaultdict(list)
    for loc in rows:
        if loc.pack is not None:
            by_pack[loc.pack].append(loc)
            continue
        try:
            if storage.rehash(loc) != loc.hash or storage.store.size(object_key(loc.hash)) != loc.size:
                corrupt.append(loc.hash)
        except (FileNotFoundError, EOFError):
            missing.append(loc.hash)
    for pack, locs in by_pack.items():
        _check_pack(storage, pack, locs, corrupt, missing)
    indexed = {loc.hash for loc in rows}
    for h in sorted(manifests):
        try:
            named = hashes(storage.manifest(h, cached=False))
        except FileNotFoundError:
            missing.append(h)
            continue
        except CorruptManifest:
            corrupt.append(h)
            continue
        missing.extend(x for x in named if x not in indexed)
    return {
        "checked": len(rows) + len(manifests),
        "corrupt": sorted(set(corrupt)),
        "missing": sorted(set(missing)),
        "cache_corrupt": _check_cache(storage),
    }
