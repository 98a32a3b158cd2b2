"""A VC's storage: what counts toward its ``storage_quota``, and the refusal past it.

Two things count, both kept by the platform, never reported by a workload:

- ``store``: the bytes of the dataset store's objects charged to the VC (``vc_objects``): an
  object uploaded for the VC (``?vc=`` on the upload routes) or named by a version of one of
  its datasets or models. The store keeps one copy of equal bytes; each VC that holds them pays
  for them once. Charges are written under the storage lock (datasets/objindex.py) with the
  check, so two commits near the limit cannot both pass; a version's delete, garbage
  collection and the storage walk take back charges no version of the VC names any more.
- ``job_outputs``: the VC's jobs' folders (``<data_dir>/jobs/<id>``: outputs, logs, scratch) as
  the storage walk last measured them (ops/storage_walk.py): a job's writes count once it has
  been measured, at the latest one walk after it ends.

:func:`refusal` is pure; the rest read the session they are given.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from ..core.models import utcnow
from .models import VC, StorageMeasure, VCObject
from .quantities import human_bytes

BATCH = 5000


def refusal(vc: str, quota: int | None, used: int, adds: int, what: str) -> str | None:
    """Why ``what`` (adding ``adds`` bytes to a VC using ``used``) is refused, or None.

    ``refusal("a", 2**30, 900 * 2**20, 200 * 2**20, "this upload")`` ->
    "VC a: storage quota 1Gi, 900Mi in use, this upload adds 200Mi; ..."
    """
    if quota is None or adds <= 0 or used + adds <= quota:
        return None
    return (
        f"VC {vc}: storage quota {human_bytes(quota)}, {human_bytes(used)} in use, {what} adds {human_bytes(adds)};"
        " delete versions or job folders (then yt data gc) or ask an admin for a larger storage_quota"
    )


def store_bytes(session: Session, vcs: Iterable[str] | None = None) -> dict[str, int]:
    """VC -> bytes of the objects charged to it (VCs without any are left out)."""
    query = select(VCObject.vc, func.coalesce(func.sum(VCObject.size), 0)).group_by(VCObject.vc)
    if vcs is not None:
        query = query.where(VCObject.vc.in_(list(vcs)))
    return {vc: int(total) for vc, total in session.execute(query)}


def measured_bytes(session: Session, vcs: Iterable[str] | None = None) -> dict[str, tuple[int, datetime | None]]:
    """VC -> (bytes of its job folders as last measured, the latest measurement)."""
    query = (
        select(StorageMeasure.vc, func.coalesce(func.sum(StorageMeasure.bytes), 0), func.max(StorageMeasure.measured))
        .where(StorageMeasure.kind == "job", StorageMeasure.vc.is_not(None))
        .group_by(StorageMeasure.vc)
    )
    if vcs is not None:
        query = query.where(StorageMeasure.vc.in_(list(vcs)))
    return {str(vc): (int(total), latest) for vc, total, latest in session.execute(query)}


def use(quota: int | None, store: int, outputs: int, measured: datetime | None) -> dict[str, Any]:
    """The ``StorageUse`` dict (pure)."""
    return {"quota": quota, "used": store + outputs, "store": store, "job_outputs": outputs, "measured": measured}


def uses(session: Session, vcs: Iterable[VC]) -> dict[str, dict[str, Any]]:
    """VC name -> its ``StorageUse`` dict, for several VCs in two queries."""
    vcs = list(vcs)
    names = [vc.name for vc in vcs]
    store, measured = store_bytes(session, names), measured_bytes(session, names)
    return {vc.name: use(vc.storage_quota, store.get(vc.name, 0), *measured.get(vc.name, (0, None))) for vc in vcs}


def used(session: Session, vc: str) -> int:
    """Bytes counted toward ``vc``'s quota now."""
    return store_bytes(session, [vc]).get(vc, 0) + measured_bytes(session, [vc]).get(vc, (0, None))[0]


def quota_of(session: Session, vc: str) -> int | None:
    return session.scalar(select(VC.storage_quota).where(VC.name == vc))


def uncharged(session: Session, vc: str, sizes: dict[str, int]) -> dict[str, int]:
    """Those of ``sizes`` (hash -> size) not charged to ``vc`` yet: through the DB-API cursor in
    batches, as the object index's lookups (a commit of 70,000 files asks for all of them)."""
    wanted = sorted(sizes)
    if not wanted:
        return {}
    conn = session.connection()
    pg = conn.dialect.name == "postgresql"
    base = f"SELECT hash FROM {VCObject.__tablename__} WHERE vc = {'%s' if pg else '?'} AND hash"
    have: set[str] = set()
    cursor = conn.connection.cursor()
    try:
        for i in range(0, len(wanted), BATCH):
            batch = wanted[i : i + BATCH]
            if pg:
                cursor.execute(f"{base} = ANY(%s)", (vc, batch))
            else:
                cursor.execute(f"{base} IN ({','.join('?' * len(batch))})", [vc, *batch])
            have.update(row[0] for row in cursor.fetchall())
    finally:
        cursor.close()
    return {h: size for h, size in sizes.items() if h not in have}


def check(session: Session, vc: str, adds: int, what: str) -> str | None:
    """:func:`refusal` with the VC's quota and usage read from ``session``."""
    quota = quota_of(session, vc)
    if quota is None or adds <= 0:
        return None
    return refusal(vc, quota, used(session, vc), adds, what)


def charge(session: Session, vc: str, sizes: dict[str, int], pending: bool = False) -> None:
    """Charge ``vc`` for objects it was not charged for (call :func:`uncharged` first, under the
    lock); ``pending``: uploads no version names yet. One ``executemany`` of tuples through the
    DB-API cursor, in key order (datasets/objindex.py ``index_rows`` does the same)."""
    if not sizes:
        return
    conn = session.connection()
    dialect = conn.dialect
    bind = VCObject.__table__.c.created.type.bind_processor(dialect)
    now = bind(utcnow()) if bind else utcnow()
    p = "%s" if dialect.name == "postgresql" else "?"
    statement = f"INSERT INTO {VCObject.__tablename__} (vc, hash, size, pending, created) VALUES ({', '.join([p] * 5)})"
    cursor = conn.connection.cursor()
    try:
        cursor.executemany(statement, [(vc, h, sizes[h], pending, now) for h in sorted(sizes)])
    finally:
        cursor.close()


def named(session: Session, vc: str, hashes: Iterable[str]) -> None:
    """A version of ``vc`` names ``hashes``: their charges are no longer pending uploads."""
    wanted = sorted(set(hashes))
    for i in range(0, len(wanted), BATCH):
        session.execute(
            update(VCObject)
            .where(VCObject.vc == vc, VCObject.pending.is_(True), VCObject.hash.in_(wanted[i : i + BATCH]))
            .values(pending=False)
        )


def release(session: Session, vc: str, hashes: Iterable[str]) -> int:
    """Take back ``vc``'s charges of ``hashes``; returns how many went."""
    gone = 0
    wanted = sorted(set(hashes))
    for i in range(0, len(wanted), BATCH):
        result = session.execute(delete(VCObject).where(VCObject.vc == vc, VCObject.hash.in_(wanted[i : i + BATCH])))
        gone += result.rowcount or 0  # type: ignore[attr-defined]
    return gone


def release_everywhere(session: Session, hashes: Iterable[str]) -> None:
    """Objects that left the store (garbage collection) are nobody's any more."""
    wanted = sorted(set(hashes))
    for i in range(0, len(wanted), BATCH):
        session.execute(delete(VCObject).where(VCObject.hash.in_(wanted[i : i + BATCH])))


def charges(session: Session, vc: str) -> dict[str, tuple[int, bool, datetime]]:
    """hash -> (size, pending, when charged) of everything ``vc`` is charged for."""
    query = select(VCObject.hash, VCObject.size, VCObject.pending, VCObject.created).where(VCObject.vc == vc)
    return {h: (size, pending, created) for h, size, pending, created in session.execute(query)}
