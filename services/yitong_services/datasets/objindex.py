"""The object index in the database: which hashes are stored, and where; the storage lock.

Writers that must not interleave with garbage collection (indexing uploads, committing
versions, deleting, collecting) hold ``storage_lock``: ``pg_advisory_xact_lock`` on
PostgreSQL, the database write lock (``BEGIN IMMEDIATE``) plus a process lock on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from ..core.db import Database
from ..core.models import utcnow
from .models import Pack, StoredObject

BATCH = 5000
_LOCK_KEY = 0x59_69_74_6F  # "Yito"


class Location(NamedTuple):
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


def _rows(session: Session, columns: str, hashes: Iterable[str]) -> Iterator[Sequence[Any]]:
    """Batches of ``columns`` rows for those of ``hashes`` that are indexed.

    Straight through the DB-API cursor of the session's connection (same transaction): a
    commit of 70,000 files looks its objects up several times, and SQLAlchemy's compilation of
    a 5,000-value ``IN`` and its row objects cost several times the query itself. PostgreSQL
    gets one array parameter per batch (``= ANY(%s)``), SQLite an ``IN`` of placeholders.
    """
    wanted = sorted(set(hashes))
    if not wanted:
        return
    conn = session.connection()
    select = f"SELECT {columns} FROM {StoredObject.__tablename__} WHERE hash"
    cursor = conn.connection.cursor()
    try:
        for batch in _batches(wanted):
            if conn.dialect.name == "postgresql":
                cursor.execute(f"{select} = ANY(%s)", (batch,))
            else:
                cursor.execute(f"{select} IN ({','.join('?' * len(batch))})", batch)
            yield cursor.fetchall()
    finally:
        cursor.close()


def locate(session: Session, hashes: Iterable[str]) -> dict[str, Location]:
    """Where each of ``hashes`` is stored (absent ones are left out)."""
    out: dict[str, Location] = {}
    for rows in _rows(session, 'hash, size, pack, "offset"', hashes):
        for row in rows:
            out[row[0]] = Location._make(row)
    return out


def stored_sizes(session: Session, hashes: Iterable[str]) -> dict[str, int]:
    """hash -> size of those of ``hashes`` that are indexed (a commit's check: no row objects)."""
    out: dict[str, int] = {}
    for rows in _rows(session, "hash, size", hashes):
        out.update(rows)
    return out


def missing(session: Session, hashes: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(hashes))
    found = stored_sizes(session, wanted)
    return [h for h in wanted if h not in found]


def _insert(session: Session):  # type: ignore[no-untyped-def]
    return sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert


def index(session: Session, rows: list[dict], pack: tuple[str, int] | None = None) -> list[dict]:
    """Add ``rows`` (hash, size, pack, offset, uploader) unless present; returns the rows that were new.
    ``pack`` (id, size) is recorded when any row is new.

    Call it under :func:`storage_lock` (every indexer does), so "present" cannot change
    between the lookup and the insert: the new rows go in with one ``executemany`` of a
    statement compiled once (a multi-VALUES insert of 5,000 rows costs far more to compile
    than to run), and ``ON CONFLICT DO NOTHING`` still guards against a racing writer.
    """
    if not rows:
        return []
    insert = _insert(session)
    present = stored_sizes(session, [r["hash"] for r in rows])
    now = utcnow()
    fresh: dict[str, dict] = {}
    for r in rows:
        if r["hash"] not in present and r["hash"] not in fresh:
            fresh[r["hash"]] = r | {"created": now}
    if not fresh:
        return []
    if pack is not None:
        session.execute(insert(Pack).values(id=pack[0], size=pack[1], created=now).on_conflict_do_nothing())
    statement = insert(StoredObject.__table__).on_conflict_do_nothing()
    conn = session.connection()
    values = list(fresh.values())
    for i in range(0, len(values), BATCH):
        conn.execute(statement, values[i : i + BATCH])
    return values
