"""The object index in the database: which hashes are stored, and where; the storage lock.

Writers that must not interleave with garbage collection (indexing uploads, committing
versions, deleting, collecting) hold ``storage_lock``: ``pg_advisory_xact_lock`` on
PostgreSQL, the database write lock (``BEGIN IMMEDIATE``) plus a process lock on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from .db import Database
from .models import Pack, StoredObject, utcnow

BATCH = 5000
_LOCK_KEY = 0x59_69_74_6F  # "Yito"


@dataclass(frozen=True)
class Location:
    hash: str
    size: int
    pack: str | None
    offset: int | None


@contextmanager
def storage_lock(db: Database) -> Iterator[Session]:
    with db.locked("storage:") as session:
        if not db.is_sqlite:
            session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        yield session


def _batches(items: list[str]) -> Iterator[list[str]]:
    for i in range(0, len(items), BATCH):
        yield items[i : i + BATCH]


def locate(session: Session, hashes: Iterable[str]) -> dict[str, Location]:
    wanted = sorted(set(hashes))
    out: dict[str, Location] = {}
    for batch in _batches(wanted):
        rows = session.execute(
            select(StoredObject.hash, StoredObject.size, StoredObject.pack, StoredObject.offset).where(
                StoredObject.hash.in_(batch)
            )
        )
        for h, size, pack, offset in rows:
            out[h] = Location(h, size, pack, offset)
    return out


def missing(session: Session, hashes: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(hashes))
    found = locate(session, wanted)
    return [h for h in wanted if h not in found]


def _insert(session: Session):  # type: ignore[no-untyped-def]
    return sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert


def index(session: Session, rows: list[dict], pack: tuple[str, int] | None = None) -> int:
    """Add ``rows`` (hash, size, pack, offset) unless present; returns how many were new."""
    if not rows:
        return 0
    insert = _insert(session)
    if pack is not None:
        session.execute(insert(Pack).values(id=pack[0], size=pack[1], created=utcnow()).on_conflict_do_nothing())
    new = 0
    now = utcnow()
    for i in range(0, len(rows), BATCH):
        batch = [r | {"created": now} for r in rows[i : i + BATCH]]
        result = session.execute(insert(StoredObject).values(batch).on_conflict_do_nothing().returning(StoredObject.hash))
        new += len(result.all())
    return new
