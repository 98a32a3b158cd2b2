"""The object index in the database: which hashes are stored, and where; the storage lock.

Writers that must not interleave with garbage collection (indexing uploads, committing
versions, deleting, collecting) hold ``storage_lock``: ``pg_advisory_xact_lock`` on
PostgreSQL, the database write lock (``BEGIN IMMEDIATE``) plus a process lock on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy import delete, insert, text
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


Row = tuple[str, int, str | None, int | None, str | None]  # hash, size, pack, offset, uploader
_COLUMNS = 'hash, size, pack, "offset", uploader, created'


def _created(session: Session) -> Any:
    """Now, as the ``created`` column binds it on this database (the DB-API gets it as is)."""
    dialect = session.get_bind().dialect
    process = StoredObject.__table__.c.created.type.bind_processor(dialect)
    now = utcnow()
    return process(now) if process else now


def index_rows(session: Session, rows: Sequence[Row], pack: tuple[str, int] | None = None) -> list[str]:
    """Add ``rows`` unless present; returns the hashes that were new (sorted).
    ``pack`` (id, size): the pack all rows are in, recorded when any row is new.

    Call it under :func:`storage_lock` (every indexer does). The rows go in with one
    ``executemany`` of tuples through the DB-API cursor, ``ON CONFLICT DO NOTHING``: nearly
    always every object of a pack is new (the client asked which were missing just before),
    and the cursor's row count says so without looking anything up. When it says fewer, the
    new ones are those that name this pack (a fresh id); rows without a pack are looked up
    first, as a pack's are only in that case."""
    first: dict[str, Row] = {}
    for r in rows:
        first.setdefault(r[0], r)  # a content twice in one pack: its first record
    unique = sorted(first.values())  # in key order: B-tree appends, not random inserts
    if not unique:
        return []
    conn = session.connection()
    if pack is not None:
        session.execute(insert(Pack).values(id=pack[0], size=pack[1], created=utcnow()))
    else:
        present = stored_sizes(session, [r[0] for r in unique])
        unique = [r for r in unique if r[0] not in present]
        if not unique:
            return []
    created = _created(session)
    p = "%s" if conn.dialect.name == "postgresql" else "?"
    statement = (
        f"INSERT INTO {StoredObject.__tablename__} ({_COLUMNS}) VALUES ({', '.join([p] * 6)}) ON CONFLICT DO NOTHING"
    )
    cursor = conn.connection.cursor()
    try:
        cursor.executemany(statement, [(*r, created) for r in unique])
        added = cursor.rowcount
        if added != len(unique) and pack is not None:  # some were there: ours name this pack
            cursor.execute(f"SELECT hash FROM {StoredObject.__tablename__} WHERE pack = {p}", (pack[0],))
            mine = {row[0] for row in cursor.fetchall()}
            unique = [r for r in unique if r[0] in mine]
    finally:
        cursor.close()
    if pack is not None and not unique:  # nothing new: the pack row goes again
        session.execute(delete(Pack).where(Pack.id == pack[0]))
    return [r[0] for r in unique]


def index(session: Session, rows: list[dict], pack: tuple[str, int] | None = None) -> list[dict]:
    """:func:`index_rows` for rows as dicts (hash, size, pack, offset, uploader); returns the new ones."""
    fresh = set(
        index_rows(session, [(r["hash"], r["size"], r["pack"], r["offset"], r["uploader"]) for r in rows], pack)
    )
    out: dict[str, dict] = {}
    for r in rows:
        if r["hash"] in fresh:
            out.setdefault(r["hash"], r)
    return list(out.values())
