"""Core statements on the DB-API connection (core/fastsql.py), on SQLite and PostgreSQL: what they
write reads back through the ORM exactly as the ORM would have written it (aware datetimes, JSON,
booleans, NULL), expanding IN lists of any length, a rollback on an exception that leaves nothing,
and a committed write that moves the read cache's count while a read does not."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, select, update

from yitong_services.core.authz import Person
from yitong_services.core.db import Database
from yitong_services.core.fastsql import In
from yitong_services.jobs import lifecycle, states
from yitong_services.jobs.models import Job, Run
from yitong_services.jobs.records import job_row
from yitong_services.jobs.spec import spec_from_dict
from yitong_services.vcs.models import VC

CANCEL = update(Job).where(Job.id == bindparam("id")).values(cancel_requested=bindparam("flag"))
BY_IDS = select(Job.id, Job.cancel_requested).where(Job.id.in_(bindparam("ids", expanding=True))).order_by(Job.id)


@pytest.fixture
def db(db_url):
    d = Database(db_url)
    d.upgrade()
    with d.writing() as s:
        s.add(VC(name="v", quota={"cpu": 2}, groups=[]))
    yield d
    d.dispose()


def new_job(db: Database, name: str) -> int:
    spec = spec_from_dict(
        {
            "name": name,
            "vc": "v",
            "command": ["python", "-c", "print('é')"],
            "environment": {"kernel": "python3"},
            "cpu": 1,
            "memory": "64Mi",
        }
    )
    values = job_row(Person(name="u", admin=False, groups=[]), spec, "v", {}, [], "local")
    values["created"] = datetime(2026, 11, 26, 12, 0, 0, 123456, tzinfo=UTC)
    with db.fast("~jobs") as tx:
        ((job_id,),) = tx.run(lifecycle.NEW_JOB, **values)
    return job_id


def test_a_new_jobs_row_names_every_column_the_insert_leaves_open():
    spec = spec_from_dict(
        {"name": "a", "vc": "v", "command": ["true"], "environment": {"kernel": "python3"}, "cpu": 1, "memory": "64Mi"}
    )
    row = job_row(Person(name="u", admin=False, groups=[]), spec, "v", {}, [], "local")
    assert set(row) == set(lifecycle.JOB_COLUMNS)
    # the columns it leaves out are the ones a new job has no value for yet
    left_out = {c.name for c in Job.__table__.columns} - set(lifecycle.JOB_COLUMNS)
    assert left_out == {"id", "admitted", "started", "finished", "exit_code", "backend_ref"}


def test_what_it_writes_the_orm_reads_back(db):
    job_id = new_job(db, "a")
    started = datetime(2026, 11, 26, 12, 0, 1, 5, tzinfo=UTC)
    with db.fast("~jobs") as tx:
        assert tx.one(lifecycle.START_STATE, id=job_id) == (states.QUEUED, False, "waiting for admission")
        tx.run(
            lifecycle.START,
            id=job_id,
            backend_ref="local:1",
            state=states.RUNNING,
            started=started,
            hosts=["n1"],
            ports={"tb": 6006},
        )
        ((run_id,),) = tx.run(lifecycle.NEW_RUN, job_id=job_id, attempt=1, record={}, metrics={}, created=started)
        tx.run(lifecycle.SET_RECORD, id=run_id, record={"run": run_id, "nested": {"x": [1, None, "é"]}})
    with db.session() as s:
        job = s.get(Job, job_id)
        assert job.started == started and job.started.tzinfo is not None
        assert job.created == datetime(2026, 11, 26, 12, 0, 0, 123456, tzinfo=UTC)
        assert (job.state, job.backend_ref, job.hosts, job.ports) == (states.RUNNING, "local:1", ["n1"], {"tb": 6006})
        assert job.spec["command"][-1] == "print('é')" and job.cancel_requested is False
        run = s.get(Run, run_id)
        assert run.record == {"run": run_id, "nested": {"x": [1, None, "é"]}} and run.created == started
    with db.fast(None) as tx:  # and it reads back what the ORM wrote
        (row,) = tx.run(lifecycle.RUN_OF, id=job_id, attempt=1)
        assert row == (run_id, {"run": run_id, "nested": {"x": [1, None, "é"]}}, {})


def test_expanding_lists_of_any_length_and_a_fixed_one(db):
    ids = [new_job(db, f"j{n}") for n in range(4)]
    with db.fast("~jobs") as tx:
        tx.run(CANCEL, id=ids[2], flag=True)
        assert tx.run(BY_IDS, ids=In(ids[:1])) == [(ids[0], False)]
        assert tx.run(BY_IDS, ids=In(ids)) == [(i, i == ids[2]) for i in ids]
        assert tx.run(BY_IDS, ids=In(ids[1:3])) == [(ids[1], False), (ids[2], True)]
        assert tx.run(lifecycle.ACTIVE) == []  # states.ACTIVE, a fixed IN list
        tx.run(lifecycle.SET_REASON, id=ids[3], reason="waiting: VC v: 2 of 2 cpu in use")
    with db.session() as s:
        assert s.get(Job, ids[3]).reason == "waiting: VC v: 2 of 2 cpu in use"


def test_an_exception_rolls_back_everything(db):
    job_id = new_job(db, "a")
    with pytest.raises(RuntimeError), db.fast("~jobs") as tx:
        tx.run(CANCEL, id=job_id, flag=True)
        raise RuntimeError("a step after the write failed")
    with db.session() as s:
        assert s.get(Job, job_id).cancel_requested is False
    with db.fast("~jobs") as tx:  # the connection went back to the pool usable
        tx.run(CANCEL, id=job_id, flag=True)
    with db.session() as s:
        assert s.get(Job, job_id).cancel_requested is True


def test_a_committed_write_moves_the_read_cache_and_a_read_does_not(db):
    job_id = new_job(db, "a")
    before = db.reads.writes.value
    with db.fast(None) as tx:
        tx.run(lifecycle.START_STATE, id=job_id)
    with db.fast("~jobs") as tx:  # a transaction that only read
        tx.run(lifecycle.START_STATE, id=job_id)
    assert db.reads.writes.value == before
    with db.fast("~jobs") as tx:
        tx.run(CANCEL, id=job_id, flag=True)
    assert db.reads.writes.value > before
