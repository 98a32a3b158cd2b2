"""Committing a version: all of it or none of it.

1. the manifest is made canonical and hashed; the parent must be the latest version;
2. the manifest goes into the store (temp, then rename);
3. under the storage lock, the parent is checked again, every object the manifest names must be
   indexed with the size it says and readable by the author (objaccess.py), the VC is charged
   for the new objects it does not hold yet (413 past its storage quota: quota.py), the version
   row is inserted and the dataset is granted the new objects, in one transaction. A crash
   or a refusal before 3 commits leaves at most an orphan manifest for GC.

Blocking: call from a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from blake3 import blake3
from sqlalchemy.orm import Session

from ..core.authz import Person
from ..core.errors import Refusal
from . import records as datasets
from .manifest import apply_changes, canonical, encode, hashes, totals
from .models import Dataset, DatasetVersion
from .objaccess import Reader, grant_dataset, readable_sizes, reader
from .objindex import storage_lock
from .quota import settle
from .schemas import CommitIn
from .storage import Storage
from .views import one_version

SHOWN = 10


def _check_parent(session: Session, d: Dataset, parent: int | None, h: str) -> DatasetVersion | None:
    """The existing version when nothing changed; 409 when ``parent`` is not the latest."""
    last = datasets.latest(session, d)
    have = last.number if last else None
    if parent != have:
        said = f"the latest is version {have}" if have else "it has no versions yet"
        raise Refusal(
            409,
            f"dataset {datasets.full_name(d)}: parent {parent} is not the latest version ({said}); pull and commit again",
        )
    if last is not None and last.manifest == h:
        return last
    return None


def _check_objects(
    session: Session, d: Dataset, who: Reader, files: list[dict[str, Any]], known: dict[str, int]
) -> list[str]:
    """Every object ``files`` name is indexed with the size they say, and ``who`` may read it
    (objaccess.py: one that exists but ``who`` cannot read counts as not stored, with the same
    answer, so a hash is never a read key). ``known`` (hash -> size) are the parent version's
    objects: the parent still exists (checked in the same transaction), GC takes the same lock
    and the dataset was granted them, so only the rest is looked up. Returns those (to grant)."""
    wanted = {f["hash"]: f["size"] for f in files}
    new = [h for h in wanted if h not in known]
    found = readable_sizes(session, who, new)
    absent = [h for h in new if h not in found]
    if absent:
        more = f" and {len(absent) - SHOWN} more" if len(absent) > SHOWN else ""
        raise Refusal(
            422,
            f"dataset {datasets.full_name(d)}: {len(absent)} objects are not in the store (upload them first): "
            f"{', '.join(absent[:SHOWN])}{more}",
        )
    sizes = {**known, **found}
    for f in files:
        if sizes[f["hash"]] != f["size"]:
            raise Refusal(
                422,
                f"dataset {datasets.full_name(d)}: file '{f['path']}' says {f['size']} bytes but object "
                f"{f['hash']} has {sizes[f['hash']]}",
            )
    return new


def _parent_objects(storage: Storage, session: Session, d: Dataset) -> dict[str, int]:
    last = datasets.latest(session, d)
    return hashes(storage.manifest(last.manifest)) if last is not None else {}


def _apply(storage: Storage, person: Person, vc: str, name: str, body: CommitIn) -> tuple[dict, list]:
    """The parent's manifest with ``body.put`` and ``body.delete`` applied, and the put entries."""
    with storage.db.session() as s:
        d = datasets.visible(s, person, vc, name)
        last = datasets.latest(s, d)
        if last is None or last.number != body.parent or last.manifest != body.base:
            have = f"version {last.number} (manifest {last.manifest})" if last else "no version"
            raise Refusal(
                409,
                f"dataset {datasets.full_name(d)}: the changes are relative to parent {body.parent} "
                f"(manifest {body.base}) but the latest is {have}; pull and commit again",
            )
    return apply_changes(storage.manifest(body.base), body.put, body.delete)


def commit(
    storage: Storage,
    person: Person,
    vc: str,
    name: str,
    body: CommitIn,
    record: Callable[[Session, dict], Any] | None = None,
) -> tuple[dict, bool]:
    """(version dict, created?). ``record(session, version)`` runs in the transaction that
    inserts a new version (the route stores its ``Idempotency-Key`` answer there)."""
    try:
        if body.files is not None:
            manifest, changed = canonical(body.files), None
        else:  # on top of the parent: only the changes are checked, and only their objects
            manifest, changed = _apply(storage, person, vc, name, body)
    except ValueError as e:
        raise Refusal(422, f"dataset {vc}/{name}: {e}") from e
    data = encode(manifest)
    h = blake3(data).hexdigest()
    if body.manifest is not None and body.manifest != h:
        raise Refusal(
            422,
            f"dataset {vc}/{name}: the changes give manifest {h}, not {body.manifest} as the client computed; commit the whole manifest",
        )
    files, size = totals(manifest)
    db = storage.db
    with db.session() as s:
        d = datasets.visible(s, person, vc, name)
        datasets.require_member(s, person, d)
        same = _check_parent(s, d, body.parent, h)
        if same is not None:
            return one_version(s, d, same), False
    storage.put_manifest(data, h)  # outside the lock (a slow store); refused below, it is GC's
    with storage_lock(db) as s:
        d = datasets.visible(s, person, vc, name)
        same = _check_parent(s, d, body.parent, h)
        if same is not None:
            return one_version(s, d, same), False
        who = reader(s, person)
        entries = manifest["files"] if changed is None else changed
        if changed is None:
            new = _check_objects(s, d, who, entries, _parent_objects(storage, s, d))
        else:  # the parent is the latest (checked above), so its objects are stored
            new = _check_objects(s, d, who, entries, {})
        fresh = set(new)  # the parent's objects are the VC's already
        settle(storage, s, d.vc, {f["hash"]: f["size"] for f in entries if f["hash"] in fresh}, "this commit")
        grant_dataset(s, d.id, new)
        storage.put_manifest(data, h)  # GC may have taken an old orphan copy meanwhile
        v = DatasetVersion(
            dataset_id=d.id,
            number=d.next_number,
            manifest=h,
            parent=body.parent,
            author=person.name,
            message=body.message,
            files=files,
            bytes=size,
        )
        d.next_number += 1
        s.add(v)
        s.flush()
        out = one_version(s, d, v)
        if record is not None:
            record(s, out)
        return out, True
