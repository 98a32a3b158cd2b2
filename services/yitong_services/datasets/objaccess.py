"""Who may read which stored object: a content hash is not a read key.

The store is shared by every VC (one copy of each content), but knowing a hash grants nothing.
A person may read an object when
- a dataset they see names it in one of its versions (``object_datasets``; VC members see the
  VC's shared datasets, the owner a private one, admins all): the grant goes with the dataset,
  so it follows a change of visibility and ends when the dataset is deleted; or
- they uploaded its bytes themselves (``objects.uploader`` for the first upload, no extra row;
  ``object_uploads`` for later ones): whoever sent the bytes has them.

A commit may name only objects its author can read (else they are "missing" and must be
uploaded); it then grants them to the dataset. Existence checks (``objects/missing``, ``HEAD``
on uploads) answer from the same rule, so they say nothing about other VCs' bytes.
Grants are per dataset, not per VC: a private dataset's objects must not become readable to
the other members of its VC by naming their hashes.

All checks are one query per batch of hashes (never per object), grants one ``executemany``
of sorted rows through the DB-API cursor (the first commit of 70,000 files grants 70,000).
Blocking: worker threads.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ..core.authz import Person, is_member
from ..vcs.models import VC
from .models import DatasetVersion, ObjectDataset, ObjectUpload
from .objindex import BATCH, _batches, stored_sizes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reader:
    """A person as the object rules see them: name, the VCs they belong to, or everything."""

    name: str
    vcs: tuple[str, ...] = ()
    everything: bool = False


def reader(session: Session, person: Person) -> Reader:
    if person.admin:
        return Reader(person.name, everything=True)
    vcs = tuple(name for name, groups in session.execute(select(VC.name, VC.groups)) if is_member(person, groups or []))
    return Reader(person.name, vcs)


def _query(postgres: bool, vcs: int) -> str:
    """Stored objects among a batch that ``uploader`` sent or a dataset the reader sees names."""
    p = "%s" if postgres else "?"
    wanted = f"= ANY({p})" if postgres else "IN ({in})"
    shared = ""
    if vcs:
        in_vcs = f"= ANY({p})" if postgres else f"IN ({','.join('?' * vcs)})"
        shared = f" OR (d.visibility <> 'private' AND d.vc {in_vcs})"
    return (
        f"SELECT o.hash, o.size FROM objects o WHERE o.hash {wanted} AND (o.uploader = {p}"
        f" OR EXISTS (SELECT 1 FROM object_uploads u WHERE u.hash = o.hash AND u.uploader = {p})"
        f" OR EXISTS (SELECT 1 FROM object_datasets g JOIN datasets d ON d.id = g.dataset_id"
        f" WHERE g.hash = o.hash AND ((d.visibility = 'private' AND d.owner = {p}){shared})))"
    )


def readable_sizes(session: Session, who: Reader, hashes: Iterable[str]) -> dict[str, int]:
    """hash -> size of those of ``hashes`` that are stored and ``who`` may read."""
    if who.everything:
        return stored_sizes(session, hashes)
    wanted = sorted(set(hashes))
    out: dict[str, int] = {}
    if not wanted:
        return out
    conn = session.connection()
    postgres = conn.dialect.name == "postgresql"
    template = _query(postgres, len(who.vcs))
    cursor = conn.connection.cursor()
    try:
        for batch in _batches(wanted):
            if postgres:
                params: list = [batch, who.name, who.name, who.name] + ([list(who.vcs)] if who.vcs else [])
                cursor.execute(template, params)
            else:
                cursor.execute(
                    template.format(**{"in": ",".join("?" * len(batch))}),
                    [*batch, who.name, who.name, who.name, *who.vcs],
                )
            out.update(cursor.fetchall())
    finally:
        cursor.close()
    return out


def missing_for(session: Session, who: Reader, hashes: Iterable[str]) -> list[str]:
    """Those of ``hashes`` ``who`` cannot read, in order: absent from the store or not."""
    wanted = list(dict.fromkeys(hashes))
    found = readable_sizes(session, who, wanted)
    return [h for h in wanted if h not in found]


def _grant(session: Session, table: str, column: str, value: int | str, hashes: Iterable[str]) -> None:
    """Insert ``(hash, value)`` rows unless present: sorted (B-tree appends, not random
    inserts), straight through the DB-API cursor (SQLAlchemy's executemany of dicts costs more)."""
    rows = [(h, value) for h in sorted(set(hashes))]
    if not rows:
        return
    conn = session.connection()
    p = "%s" if conn.dialect.name == "postgresql" else "?"
    cursor = conn.connection.cursor()
    try:
        cursor.executemany(f"INSERT INTO {table} (hash, {column}) VALUES ({p}, {p}) ON CONFLICT DO NOTHING", rows)
    finally:
        cursor.close()


def grant_dataset(session: Session, dataset_id: int, hashes: Iterable[str]) -> None:
    _grant(session, ObjectDataset.__tablename__, "dataset_id", dataset_id, hashes)


def grant_upload(session: Session, uploader: str, hashes: Iterable[str]) -> None:
    _grant(session, ObjectUpload.__tablename__, "uploader", uploader, hashes)


def drop_grants(session: Session, hashes: list[str]) -> None:
    """Forget the grants of objects garbage collection removed."""
    for i in range(0, len(hashes), BATCH):
        batch = hashes[i : i + BATCH]
        session.execute(delete(ObjectDataset).where(ObjectDataset.hash.in_(batch)))
        session.execute(delete(ObjectUpload).where(ObjectUpload.hash.in_(batch)))


def backfill(storage) -> int:  # type: ignore[no-untyped-def]
    """Grant every dataset the objects its versions name when it has versions but no grants
    (versions committed before grants existed: migration 0005). Returns the datasets filled."""
    from .manifest import CorruptManifest, hashes
    from .objindex import storage_lock

    with storage.db.session() as s:
        granted = select(ObjectDataset.dataset_id).distinct()
        rows = s.execute(
            select(DatasetVersion.dataset_id, DatasetVersion.manifest).where(DatasetVersion.dataset_id.not_in(granted))
        ).all()
    named: dict[int, set[str]] = defaultdict(set)
    for dataset_id, manifest in rows:
        try:
            named[dataset_id].update(hashes(storage.manifest(manifest)))
        except (FileNotFoundError, CorruptManifest) as e:
            log.warning(
                "object grants: manifest %s of dataset %s cannot be read (%s); run verify", manifest, dataset_id, e
            )
    filled = [d for d, hs in named.items() if hs]
    if filled:
        with storage_lock(storage.db) as s:
            for dataset_id in filled:
                grant_dataset(s, dataset_id, named[dataset_id])
    return len(filled)
