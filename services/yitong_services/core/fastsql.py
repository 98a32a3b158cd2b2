"""Core statements run straight on the DB-API connection, for the few transactions every job pays.

A job's start and end are each a transaction of a few statements, and on a busy node they run
hundreds of times a minute (an experiment's trials are jobs). Through a Session each statement
costs SQLAlchemy's per-statement work (about 0.3-0.6 ms of CPU here), several times what the
database itself spends. A :class:`Prepared` statement is built with Core from the models' own
tables, compiled once for the engine's dialect, and executed with its types' bind and result
processors on the pooled DB-API connection: the same SQL and the same stored values as the ORM's,
for about a fifth of the CPU per transaction (docs/benchmarks.md, "Hyperparameter search").

:func:`transaction` is :meth:`Database.locked` for such statements: the same process lock, the
same ``BEGIN IMMEDIATE`` on SQLite, and a commit that moves the read cache's count of writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import bindparam
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter

from .readcache import MARK

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.engine import Dialect
    from sqlalchemy.orm import Session
    from sqlalchemy.sql import ClauseElement

    from .readcache import ReadCache

_Processor = Callable[[Any], Any] | None


class Database(Protocol):
    """What this module needs of :class:`.db.Database` (which imports it)."""

    engine: Engine
    is_sqlite: bool
    reads: ReadCache

    def held(self, names: Sequence[str]) -> AbstractContextManager[None]: ...

    def prepared(self, stmt: ClauseElement, lengths: tuple[tuple[str, int], ...] = ()) -> Prepared: ...


def bound(*names: str) -> dict[str, BindParameter[Any]]:
    """``{name: bindparam(name)}``: the values of an insert or update, each given when it runs."""
    return {name: bindparam(name) for name in names}


class In(tuple[Any, ...]):
    """The values of an expanding parameter (``column.in_(bindparam(name, expanding=True))``);
    never empty."""


class Prepared:
    """``stmt`` compiled for ``dialect``: its SQL, the order of its parameters, the values it fixes
    (literals such as ``Job.state.in_(ACTIVE)``), and a processor per parameter and result column.
    Every parameter the statement leaves open must be given when it runs (Python-side column
    defaults are not applied: name the column's value). An expanding parameter (``IN`` a list
    given when it runs) is compiled for one length (``lengths``): a variant per length is kept."""

    def __init__(self, stmt: ClauseElement, dialect: Dialect, lengths: dict[str, int] | None = None) -> None:
        compiled = stmt.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)
        # the IN lists rendered: fixed ones with their values, given ones with placeholders
        open_: dict[str, Any] = {b.key: None for b in compiled.binds.values() if b.required}
        open_.update({name: [None] * n for name, n in (lengths or {}).items()})
        state = compiled.construct_expanded_state(open_)
        self.sql = state.statement
        self.writes = not self.sql.lstrip()[:6].upper().startswith("SELECT")
        params = dict(state.parameters)
        self.positional = bool(compiled.positional)
        self.names: list[str] = list(state.positiontup or []) if self.positional else list(params)
        self.fixed = {k: v for k, v in params.items() if v is not None}
        binds = compiled.binds

        def bind_processor(name: str) -> _Processor:
            bind = binds.get(name)
            if bind is None:
                bind = binds.get(name.rsplit("_", 1)[0])  # an IN list's item: name_1_2
            return None if bind is None else bind.type.dialect_impl(dialect).bind_processor(dialect)

        self.processors = [(name, bind_processor(name)) for name in self.names]
        columns = getattr(stmt, "selected_columns", None)
        if columns is None:
            columns = getattr(stmt, "_returning", ()) or ()
        self.columns = [c.type.dialect_impl(dialect) for c in columns]
        self._dialect = dialect
        self._results: list[_Processor] | None = None  # from the first result's column types

    def parameters(self, given: dict[str, Any]) -> Sequence[Any] | dict[str, Any]:
        values = {**self.fixed, **given} if self.fixed else given
        if self.positional:
            return tuple(p(values[n]) if p is not None else values[n] for n, p in self.processors)
        return {n: (p(values[n]) if p is not None else values[n]) for n, p in self.processors}

    def rows(self, cursor: Any) -> list[tuple[Any, ...]]:
        got = cursor.fetchall()
        procs = self._results
        if procs is None:  # as SQLAlchemy does: a processor may depend on the driver's type code
            codes = [d[1] for d in cursor.description]
            d = self._dialect
            procs = self._results = [t.result_processor(d, c) for t, c in zip(self.columns, codes, strict=True)]
        if not any(procs):
            return [tuple(r) for r in got]
        return [tuple(v if p is None else p(v) for p, v in zip(procs, r, strict=True)) for r in got]


class Transaction:
    """One transaction on a pooled DB-API connection; statements are run by :meth:`run`."""

    def __init__(self, db: Database, dbapi: Any, info: dict[str, Any] | None = None) -> None:
        self._db = db
        self._cursor = dbapi.cursor()
        self._info = info  # a joined Session's connection: a write marks it for the read cache
        self.wrote = False

    def run(self, stmt: ClauseElement, **params: Any) -> list[tuple[Any, ...]]:
        """Run ``stmt`` (a module-level Core statement: it is compiled once and kept) with the
        parameters it leaves open (:class:`In` for an expanding one); the rows it returns,
        processed, for a select or a RETURNING."""
        lists = {k: v for k, v in params.items() if isinstance(v, In)}
        if lists:
            for name, values in lists.items():
                del params[name]
                params.update({f"{name}_{i}": v for i, v in enumerate(values, start=1)})
            prepared = self._db.prepared(stmt, tuple(sorted((k, len(v)) for k, v in lists.items())))
        else:
            prepared = self._db.prepared(stmt)
        self._cursor.execute(prepared.sql, prepared.parameters(params))
        if prepared.writes and not self.wrote:
            self.wrote = True
            if self._info is not None:
                self._info[MARK] = True
        return prepared.rows(self._cursor) if prepared.columns else []

    def one(self, stmt: ClauseElement, **params: Any) -> tuple[Any, ...] | None:
        """The first row of ``stmt``, or None."""
        rows = self.run(stmt, **params)
        return rows[0] if rows else None


@contextmanager
def transaction(db: Database, lock: str | Sequence[str] | None) -> Iterator[Transaction]:
    """A write transaction holding the process lock ``lock`` (or each of several, in sorted order,
    as :meth:`Database.locked_many`) and, on SQLite, the database's write lock from its start;
    committed on leaving, rolled back on an exception. Without ``lock``: a read, each statement
    on its own on SQLite."""
    names = [] if lock is None else [lock] if isinstance(lock, str) else lock
    sqlite, begun = db.is_sqlite, db.is_sqlite and lock is not None  # SQLite: a read needs no BEGIN
    with db.held(names):
        pooled = db.engine.raw_connection()
        try:
            dbapi: Any = pooled.driver_connection
            if begun:
                dbapi.execute("BEGIN IMMEDIATE")
            tx = Transaction(db, dbapi)
            try:
                yield tx
            except BaseException:
                if begun:
                    dbapi.execute("ROLLBACK")
                elif not sqlite:
                    dbapi.rollback()
                raise
            if tx.wrote:
                pooled.info[MARK] = True  # the pool's checkin moves the read cache's count again
            if begun:
                dbapi.execute("COMMIT")
            elif not sqlite:
                dbapi.commit()
            if tx.wrote:
                db.reads.writes.bump()
        finally:
            pooled.close()


def joined(db: Database, session: Session) -> Transaction:
    """A :class:`Transaction` inside ``session``'s transaction, on its connection: for the hot
    statements of a pass that also uses the ORM. The session commits or rolls back (a write here
    moves the read cache as the session's own would); its identity map does not see these rows,
    so the pass must not also load them through it."""
    conn = session.connection()
    return Transaction(db, conn.connection.driver_connection, conn.info)
