"""Engine and sessions: SQLite by default (``<data_dir>/yitong.sqlite``), PostgreSQL by URL.

SQLite transactions are started explicitly so that an allocation can take the database write
lock up front (``BEGIN IMMEDIATE``); other transactions start ``DEFERRED``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql import ClauseElement

from .fastsql import Prepared, Transaction, transaction
from .readcache import ReadCache, Writes

MIGRATIONS = Path(__file__).parent.parent / "migrations"


def _sqlite_events(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        # WAL with NORMAL: a commit is not fsynced (the WAL is, at checkpoints), so a commit
        # survives a killed process (kill -9) and only a power loss may undo the last ones
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:  # type: ignore[no-untyped-def]
        mode = "IMMEDIATE" if conn.get_execution_options().get("yitong_immediate") else "DEFERRED"
        # straight to the driver: a statement through the engine costs more than the BEGIN itself
        conn.connection.driver_connection.execute(f"BEGIN {mode}")


#: seconds to open a connection to a database server before answering 503
CONNECT_TIMEOUT = 5


class Database:
    """One engine, a session factory, per-VC locks for allocations in this process, and the
    cache of hot reads that this process's commits invalidate (:mod:`.readcache`)."""

    def __init__(self, url: str) -> None:
        self.url = make_url(url)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        if self.is_sqlite:
            if self.url.database and self.url.database != ":memory:":
                Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
            self.engine = create_engine(self.url, connect_args={"check_same_thread": False, "timeout": 30})
            _sqlite_events(self.engine)
        else:
            # a server that does not answer is a 503 in seconds (core/errors.py), not a hung request
            self.engine = create_engine(
                self.url,
                pool_pre_ping=True,
                pool_size=10,
                max_overflow=20,
                pool_timeout=10,
                connect_args={"connect_timeout": CONNECT_TIMEOUT}
                if self.url.get_backend_name() == "postgresql"
                else {},
            )
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._locking = sessionmaker(self.engine.execution_options(yitong_immediate=True), expire_on_commit=False)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        # hot reads (GET /jobs, GET /jobs/{id}) kept until this process commits a write
        self.reads = ReadCache(Writes(self.engine))
        self._prepared: dict[Any, Prepared] = {}

    def prepared(self, stmt: ClauseElement, lengths: tuple[tuple[str, int], ...] = ()) -> Prepared:
        """``stmt`` compiled for this engine, once per length of its expanding parameters (:mod:`.fastsql`)."""
        key = (stmt, lengths) if lengths else stmt
        found = self._prepared.get(key)
        if found is None:
            found = self._prepared[key] = Prepared(stmt, self.engine.dialect, dict(lengths))
        return found

    def fast(self, lock: str | Sequence[str] | None) -> AbstractContextManager[Transaction]:
        """:meth:`locked` for Core statements run on the DB-API connection (:mod:`.fastsql`)."""
        return transaction(self, lock)

    def session(self) -> Session:
        return self._sessions()

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A write transaction. On SQLite it takes the write lock up front (``BEGIN IMMEDIATE``),
        so it waits for another writer (busy timeout) instead of failing with "database is
        locked" when a read turns into a write after someone else committed."""
        with self._locking() as session, session.begin():
            yield session

    @contextmanager
    def locked(self, vc: str) -> Iterator[Session]:
        """A transaction that holds the process lock of ``vc`` (and, on SQLite, the write lock).

        On PostgreSQL the caller also takes ``SELECT ... FOR UPDATE`` on the VC row, which
        serialises allocations across processes.
        """
        with self.held([vc]), self._locking() as session, session.begin():
            yield session

    @contextmanager
    def locked_many(self, names: list[str]) -> Iterator[Session]:
        """:meth:`locked` for several names at once (process locks taken in sorted order)."""
        with self.held(names), self._locking() as session, session.begin():
            yield session

    @contextmanager
    def held(self, names: Sequence[str]) -> Iterator[None]:
        """This process's locks of ``names``, taken in sorted order (no database work)."""
        with self._locks_guard:
            locks = [self._locks.setdefault(n, threading.Lock()) for n in sorted(set(names))]
        with contextlib.ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock)
            yield

    def upgrade(self) -> None:
        """``alembic upgrade head``, programmatically (no alembic.ini needed)."""
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "head")

    def dispose(self) -> None:
        self.engine.dispose()
