"""The hot-read cache (core/readcache.py) over a real SQLite database: a kept answer is served
until this process commits a write (a transaction that only read, or rolled back, changes nothing), a read that raced a write is not kept, concurrent misses
share one read, a read-only transaction invalidates nothing, and refusals are not kept."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import text

from yitong_services.core.db import Database


@pytest.fixture
def db(tmp_path):
    d = Database(f"sqlite:///{tmp_path / 'cache.sqlite'}")
    with d.writing() as s:
        s.execute(text("CREATE TABLE t (v INTEGER)"))
        s.execute(text("INSERT INTO t VALUES (1)"))
    yield d
    d.dispose()


def total(db: Database, calls: list[int]) -> int:
    calls.append(1)
    with db.session() as s:
        return s.execute(text("SELECT SUM(v) FROM t")).scalar_one()


async def test_kept_until_a_write_commits(db):
    calls: list[int] = []
    assert await db.reads.read("sum", total, db, calls) == 1
    assert await db.reads.read("sum", total, db, calls) == 1
    assert len(calls) == 1
    with db.session() as s:  # a read-only transaction changes nothing
        s.execute(text("SELECT 1")).all()
    with db.writing() as s:  # nor does a committed write transaction that only read (an idle admission pass)
        s.execute(text("SELECT v FROM t")).all()
    assert await db.reads.read("sum", total, db, calls) == 1 and len(calls) == 1
    with db.writing() as s:  # a write rolled back changes nothing either
        s.execute(text("INSERT INTO t VALUES (5)"))
        s.rollback()
    assert await db.reads.read("sum", total, db, calls) == 1
    with db.writing() as s:
        s.execute(text("INSERT INTO t VALUES (2)"))
    assert await db.reads.read("sum", total, db, calls) == 3
    assert len(calls) == 2


async def test_a_write_during_the_read_is_not_kept(db):
    calls: list[int] = []

    def racing(db: Database) -> int:
        out = total(db, calls)
        with db.writing() as s:  # another request commits while this one reads
            s.execute(text("INSERT INTO t VALUES (10)"))
        return out

    assert await db.reads.read("sum", racing, db) == 1
    assert await db.reads.read("sum", total, db, calls) == 11  # not the raced answer


async def test_concurrent_misses_share_one_read(db):
    calls: list[int] = []
    gate = threading.Event()

    def slow(db: Database) -> int:
        gate.wait(5)
        return total(db, calls)

    waiters = [asyncio.create_task(db.reads.read("sum", slow, db)) for _ in range(50)]
    await asyncio.sleep(0.1)
    gate.set()
    assert await asyncio.gather(*waiters) == [1] * 50
    assert len(calls) == 1


async def test_refusals_are_not_kept(db):
    calls: list[int] = []

    def refused(db: Database) -> int:
        calls.append(1)
        raise LookupError("no such thing")

    for _ in range(2):
        with pytest.raises(LookupError):
            await db.reads.read("missing", refused, db)
    assert len(calls) == 2


async def test_kept_no_longer_than_the_ttl(db):
    calls: list[int] = []
    db.reads.ttl = 0.05
    await db.reads.read("sum", total, db, calls)
    await asyncio.sleep(0.1)
    await db.reads.read("sum", total, db, calls)
    assert len(calls) == 2
