"""What an experiment's pass reads and writes, as Core statements on the DB-API connection.

The driver's pass runs at every trial's end (``Driver.job_ended``), so, like a job's start and
end (``jobs/lifecycle.py``), its statements skip the Session's per-statement work
(``core/fastsql.py``). Its experiment and trials are plain rows here; the routes keep using the
ORM models.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select, update

from ..core.fastsql import Transaction
from ..jobs.models import Job
from . import states
from .models import Experiment, Trial


@dataclass
class ExperimentRow:
    """The columns of an experiment that a pass reads (the attributes of :class:`Experiment`)."""

    id: int
    user: str
    groups: list[str]
    config: dict[str, Any]
    state: str
    used_seconds: float
    resumed: datetime


@dataclass
class TrialRow:
    """A trial as a pass reads and changes it (the attributes of :class:`Trial`)."""

    id: int
    number: int
    job_id: int | None
    params: dict[str, Any]
    internal: dict[str, Any]
    state: str
    reason: str
    intermediate: list[Any]
    value: float | None
    offset: int
    created: datetime
    finished: datetime | None


_TRIAL = (
    Trial.id,
    Trial.number,
    Trial.job_id,
    Trial.params,
    Trial.internal,
    Trial.state,
    Trial.reason,
    Trial.intermediate,
    Trial.value,
    Trial.offset,
    Trial.created,
    Trial.finished,
)
EXPERIMENT = select(
    Experiment.id,
    Experiment.user,
    Experiment.groups,
    Experiment.config,
    Experiment.state,
    Experiment.used_seconds,
    Experiment.resumed,
).where(Experiment.id == bindparam("id"))
RUNNING = (
    select(*_TRIAL)
    .where(Trial.experiment_id == bindparam("id"), Trial.state == states.RUNNING)
    .order_by(Trial.number)
    .with_for_update()  # the report route writes these rows too
)
ENDED_COUNT = select(func.count(Trial.id), func.max(Trial.number)).where(
    Trial.experiment_id == bindparam("id"), Trial.state != states.RUNNING
)
ENDED = select(*_TRIAL).where(Trial.experiment_id == bindparam("id"), Trial.state != states.RUNNING)
JOBS = select(Job.id, Job.state, Job.reason).where(Job.id.in_(bindparam("ids", expanding=True)))
SAVE_TRIAL = (
    update(Trial)
    .where(Trial.id == bindparam("id"))
    .values(
        state=bindparam("state"),
        reason=bindparam("reason"),
        intermediate=bindparam("intermediate"),
        value=bindparam("value"),
        offset=bindparam("offset"),
        internal=bindparam("internal"),
        finished=bindparam("finished"),
    )
)
NEW_TRIAL = (
    Trial.__table__.insert()
    .values(
        experiment_id=bindparam("experiment_id"),
        number=bindparam("number"),
        job_id=bindparam("job_id"),
        params=bindparam("params"),
        internal=bindparam("internal"),
        state=bindparam("state"),
        reason=bindparam("reason"),
        intermediate=bindparam("intermediate"),
        offset=bindparam("offset"),
        created=bindparam("created"),
    )
    .returning(Trial.id)
)
DONE = (
    update(Experiment)
    .where(Experiment.id == bindparam("id"))
    .values(
        state=bindparam("state"),
        finished=bindparam("finished"),
        used_seconds=bindparam("used_seconds"),
        reason=bindparam("reason"),
    )
)


def experiment(tx: Transaction, exp_id: int) -> ExperimentRow | None:
    row = tx.one(EXPERIMENT, id=exp_id)
    return None if row is None else ExperimentRow(*row)


def trials(tx: Transaction, stmt: Any, exp_id: int) -> list[TrialRow]:
    """The trials ``stmt`` (:data:`RUNNING` or :data:`ENDED`) selects."""
    return [TrialRow(*r) for r in tx.run(stmt, id=exp_id)]


def snapshot(trial: TrialRow) -> tuple[Any, ...]:
    """What :func:`save` compares: a pass replaces a trial's list and dict, never changes them."""
    t = trial
    return (t.state, t.reason, id(t.intermediate), t.value, t.offset, id(t.internal), t.finished)


def save(tx: Transaction, trial: TrialRow, read: tuple[Any, ...]) -> None:
    """Write ``trial`` back when it changed since it was read (``read``: its :func:`snapshot`)."""
    if snapshot(trial) != read:
        tx.run(
            SAVE_TRIAL,
            id=trial.id,
            state=trial.state,
            reason=trial.reason,
            intermediate=trial.intermediate,
            value=trial.value,
            offset=trial.offset,
            internal=trial.internal,
            finished=trial.finished,
        )
