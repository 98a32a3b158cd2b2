"""What an experiment's pass reads and writes, as Core statements on the DB-API connection.

The driver's pass runs at every trial's end (``Driver.job_ended``), so, like a job's start and
end (``jobs/lifecycle.py``), its statements skip the Session's per-statement work
(``core/fastsql.py``). Its experiment and trials are plain rows here; the routes keep using the
ORM models.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update

from ..core.fastsql import Transaction, bound
from ..jobs.models import Job, Run
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


EXPERIMENT = select(*(getattr(Experiment, f.name) for f in fields(ExperimentRow))).where(
    Experiment.id == bindparam("id")
)
_TRIAL = [getattr(Trial, f.name) for f in fields(TrialRow)]
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
#: the trials' jobs, with their current runs' metrics (what a job's result fd reported is there)
JOBS = (
    select(Job.id, Job.state, Job.reason, Run.metrics)
    .outerjoin(Run, (Run.job_id == Job.id) & (Run.attempt == Job.attempts))
    .where(Job.id.in_(bindparam("ids", expanding=True)))
)
#: what a pass may change of a trial
_CHANGED = ("state", "reason", "intermediate", "value", "offset", "internal", "finished")
SAVE_TRIAL = update(Trial).where(Trial.id == bindparam("id")).values(bound(*_CHANGED))
#: what a new trial is inserted with (its id comes back; value and finished are NULL)
_NEW = ("number", "job_id", "params", "internal", "state", "reason", "intermediate", "offset", "created")
NEW_TRIAL = insert(Trial).values(bound("experiment_id", *_NEW)).returning(Trial.id)
DONE = (
    update(Experiment)
    .where(Experiment.id == bindparam("id"))
    .values(bound("state", "finished", "used_seconds", "reason"))
)


def experiment(tx: Transaction, exp_id: int) -> ExperimentRow | None:
    row = tx.one(EXPERIMENT, id=exp_id)
    return None if row is None else ExperimentRow(*row)


def trials(tx: Transaction, stmt: Any, exp_id: int) -> list[TrialRow]:
    """The trials ``stmt`` (:data:`RUNNING` or :data:`ENDED`) selects."""
    return [TrialRow(*r) for r in tx.run(stmt, id=exp_id)]


def snapshot(trial: TrialRow) -> tuple[Any, ...]:
    """What :func:`save` compares: a pass replaces a trial's list and dict, never changes them,
    so their identity says whether they changed."""
    return tuple(id(v) if isinstance(v, list | dict) else v for v in (getattr(trial, f) for f in _CHANGED))


def save(tx: Transaction, trial: TrialRow, read: tuple[Any, ...]) -> None:
    """Write ``trial`` back when it changed since it was read (``read``: its :func:`snapshot`)."""
    if snapshot(trial) != read:
        tx.run(SAVE_TRIAL, id=trial.id, **{f: getattr(trial, f) for f in _CHANGED})


def insert_trial(tx: Transaction, experiment_id: int, trial: TrialRow) -> None:
    """Insert ``trial`` (its ``id`` is set from the row)."""
    ((trial.id,),) = tx.run(NEW_TRIAL, experiment_id=experiment_id, **{f: getattr(trial, f) for f in _NEW})
