"""The experiment driver: one task per service, beside the job manager (core/app.py starts it).

Every pass, for each running experiment: read what its trials reported (the file channel, from
the stored offset), ask the assessor about trials with new steps (a pruned trial's job is
cancelled and the trial ends ``pruned``), end trials whose jobs ended, then ask the tuner for new
trials while fewer than ``concurrency`` run and the budget allows; an experiment with its budget
spent and no trial running is ``done``. All state is in the database: a restart carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from anyio import to_thread
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from ..core.db import Database
from ..core.errors import Refusal
from ..core.fastsql import In, Transaction, joined
from ..core.models import utcnow
from ..jobs import states as job_states
from ..jobs.models import Job
from ..vcs.quantities import Resources
from . import channel, engine, records, states
from . import pass_rows as hpo_rows
from .models import Experiment, Trial
from .pass_rows import ExperimentRow, TrialRow

log = logging.getLogger(__name__)
MAX_STEPS = 100_000  # intermediate results kept per trial
SUBMIT_FAILED = "a trial could not be submitted"  # an experiment stopped so has failed (yt hpo --follow)
LOG_TAIL = "last lines of its log"
TAIL_LINES, TAIL_WIDTH = 5, 200  # a failed trial's reason: its log's last lines, each clipped
EXPERIMENT_OF = select(Trial.experiment_id).where(Trial.job_id == bindparam("job_id"))  # a job's, if it is a trial


def last_lines(data: bytes, lines: int = TAIL_LINES, width: int = TAIL_WIDTH) -> str:
    """The last ``lines`` non-blank lines of a log (pure), each clipped to ``width`` characters."""
    text = data.decode("utf-8", "replace").replace("\r", "\n")
    kept = [line.rstrip() for line in text.split("\n") if line.strip()][-lines:]
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in kept)


async def read_log_end(backend: Any, ref: str, most: int = 16) -> bytes:
    """The end of rank 0's log: read on in chunks (at most ``most``), keeping the last two."""
    kept, offset = b"", 0
    for _ in range(most):
        chunk = await backend.read_log(ref, 0, offset)
        kept, offset = kept[-len(chunk) :] + chunk if chunk else kept, offset + len(chunk)
        if len(chunk) < (1 << 20):
            break
    return kept


class Jobs(Protocol):
    """What the driver needs of the job manager."""

    backend: Any
    on_end: list[Any]  # called with a job's id, in a worker thread, once its end is committed

    def workdir(self, job_id: int) -> Path: ...

    def wake(self) -> None: ...

    async def cancel(self, job_id: int) -> None: ...


def elapsed(exp: Experiment | ExperimentRow, now: datetime) -> float:
    run = (now - exp.resumed).total_seconds() if exp.state == states.EXP_RUNNING else 0.0
    return exp.used_seconds + max(run, 0.0)


class Driver:
    def __init__(self, db: Database, jobs: Jobs, inventory: Resources, poll_interval: float) -> None:
        self.db, self.jobs, self.inventory, self.poll_interval = db, jobs, inventory, poll_interval
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        # experiment id -> {trial number: row} of its ended trials: an ended trial's row changes
        # only by going back to running (a retried job revives it), so a pass reads the running
        # ones and these from memory, checked against the table's counts (``_ended_rows``)
        self._ended: dict[int, dict[int, dict[str, Any]]] = {}
        # experiment id -> whether its trials take dataset inputs (a pass then needs a Session)
        self._inputs: dict[int, bool] = {}

    def wake(self) -> None:
        self._wake.set()

    def wake_threadsafe(self) -> None:
        loop = getattr(self, "_loop_ref", None)
        if loop is not None:
            loop.call_soon_threadsafe(self._wake.set)

    async def start(self) -> None:
        self._loop_ref = asyncio.get_running_loop()
        self.jobs.on_end.append(self.job_ended)  # a trial's job ended: decide at once
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 20)

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("experiment driver pass failed")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_interval)
            self._wake.clear()

    async def tick(self) -> None:
        def running() -> list[int]:
            with self.db.session() as s:
                return list(s.scalars(select(Experiment.id).where(Experiment.state == states.EXP_RUNNING)))

        ids = await to_thread.run_sync(running)
        for gone in set(self._ended) - set(ids):  # done or stopped: a resume reads its rows again
            self._ended.pop(gone, None)
        for exp_id in ids:
            cancel, created = await to_thread.run_sync(self.step, exp_id)
            await self._cancel(cancel)
            if created:
                self.jobs.wake()

    async def _cancel(self, job_ids: list[int]) -> None:
        for job_id in job_ids:
            await self.jobs.cancel(job_id)

    def job_ended(self, job_id: int) -> None:
        """The job manager's ``on_end`` (in its worker thread, the end committed): when the job is
        a trial's, its experiment's pass runs now, and the manager admits the trials it asks for
        in the same tick."""
        with self.db.fast(None) as tx:  # every job's end asks: on the DB-API connection (core/fastsql.py)
            row = tx.one(EXPERIMENT_OF, job_id=job_id)
        if row is None or row[0] is None:
            return
        exp_id = row[0]
        cancel, _created = self.step(exp_id)
        if cancel:
            asyncio.run_coroutine_threadsafe(self._cancel(cancel), self._loop_ref)

    def fold_reports(self, exp: ExperimentRow, trials: list[TrialRow]) -> None:
        """Fold what each running trial appended to its file channel into its row (in the pass's
        transaction: a few small reads of the trials' own files, no lock held long)."""
        metric = exp.config["objective"]["metric"]
        for t in trials:
            if t.job_id is None:
                continue
            found, new_offset = channel.read_records(self.jobs.workdir(t.job_id) / ".nni" / "metrics", t.offset)
            if new_offset == t.offset:
                continue
            inter, value = list(t.intermediate), t.value
            for r in found:
                v = channel.metric_value(r.get("value"), metric)
                if v is None:
                    continue
                if r.get("type") == "FINAL":
                    value = v
                elif r.get("type") in ("PERIODICAL", "INTERMEDIATE") and len(inter) < MAX_STEPS:
                    inter.append(v)
            t.intermediate, t.value, t.offset = inter, value, new_offset

    def step(self, exp_id: int) -> tuple[list[int], bool]:
        try:
            cancel, created, failed = self._step(exp_id)
        except Refusal as e:  # a trial the platform refuses (quota, VC gone): stop, saying why
            with self.db.writing() as s:
                exp = s.get(Experiment, exp_id)
                exp.used_seconds, exp.state = elapsed(exp, utcnow()), states.EXP_STOPPED
                exp.reason = f"{SUBMIT_FAILED}: {e.detail}"
            return [], False
        if failed:
            self.add_log_tails(failed)
        return cancel, created

    def add_log_tails(self, failed: list[tuple[int, int]]) -> None:
        """Append the last lines of each failed trial's job log to its reason (``exit code 1``
        alone says nothing), after the pass's transaction: a log read holds no lock."""
        with self.db.session() as s:
            refs = dict(s.execute(select(Job.id, Job.backend_ref).where(Job.id.in_([j for _, j in failed]))).all())
        tails = {trial_id: self._read_tail(refs.get(job_id)) for trial_id, job_id in failed}
        if not any(tails.values()):
            return
        with self.db.writing() as s:
            for trial_id, tail in tails.items():
                trial = s.get(Trial, trial_id)
                if tail and trial is not None and trial.state == states.FAILED and LOG_TAIL not in trial.reason:
                    trial.reason = f"{trial.reason}; {LOG_TAIL}:\n{tail}"

    def _read_tail(self, ref: str | None) -> str:
        if not ref:
            return ""
        try:
            loop = getattr(self, "_loop_ref", None)
            read = read_log_end(self.jobs.backend, ref)
            data = asyncio.run_coroutine_threadsafe(read, loop).result(10) if loop else asyncio.run(read)
        except Exception as e:  # the reason stays as it was; the log is still in yt job logs
            log.info("cannot read the log of %s: %s", ref, e)
            return ""
        return last_lines(data)

    def _step(self, exp_id: int) -> tuple[list[int], bool, list[tuple[int, int]]]:
        """One pass of the experiment in one transaction. Its rows go on the DB-API connection;
        an experiment whose trials take dataset inputs (or one not seen yet) also opens a Session
        on the same transaction, for the submit's reads and pins of the inputs."""
        if self._inputs.get(exp_id, True):
            with self.db.locked("~jobs") as s:
                return self._pass(exp_id, joined(self.db, s), s)
        with self.db.fast("~jobs") as tx:
            return self._pass(exp_id, tx, None)

    def _pass(self, exp_id: int, tx: Transaction, s: Session | None) -> tuple[list[int], bool, list[tuple[int, int]]]:
        cancel: list[int] = []
        failed: list[tuple[int, int]] = []  # (trial id, job id) of trials whose jobs failed now
        created = False
        exp = hpo_rows.experiment(tx, exp_id)
        if exp is None or exp.state != states.EXP_RUNNING:
            self._ended.pop(exp_id, None)
            self._inputs.pop(exp_id, None)
            return [], False, []
        self._inputs[exp_id] = bool(exp.config["template"].get("inputs"))  # fixed for the experiment
        trials = hpo_rows.trials(tx, hpo_rows.RUNNING, exp_id)
        read = {t.id: hpo_rows.snapshot(t) for t in trials}
        ended_rows = self._ended_rows(tx, exp_id, trials)
        job_ids = [t.job_id for t in trials if t.job_id is not None and t.state == states.RUNNING]
        jobs = {j[0]: j for j in tx.run(hpo_rows.JOBS, ids=In(job_ids))} if job_ids else {}
        self.fold_reports(exp, trials)  # after the reads: its changes and the ends go in one UPDATE
        now = utcnow()
        for t in trials:  # trials whose jobs ended
            job = jobs.get(t.job_id) if t.job_id else None
            if t.state != states.RUNNING or job is None or job[1] not in job_states.TERMINAL:
                continue
            job_id, job_state, job_reason, job_metrics = job
            if t.value is None and job_state == job_states.SUCCEEDED:  # its result fd (yitong_lab's final)
                t.value = channel.metric_value(job_metrics or {}, exp.config["objective"]["metric"])
            if t.reason.startswith("pruned"):
                t.state = states.PRUNED
            elif job_state == job_states.SUCCEEDED and t.value is not None:
                t.state, t.reason = states.COMPLETE, ""
            elif job_state == job_states.SUCCEEDED:
                t.state, t.reason = states.FAILED, "the trial ended without reporting a final result"
            elif job_state == job_states.CANCELLED:
                t.state, t.reason = states.CANCELLED, job_reason or "cancelled"
            else:
                t.state, t.reason = states.FAILED, f"job {job_id} {job_state}: {job_reason}"
                failed.append((t.id, job_id))
            t.finished = now
        now_ended = [t for t in trials if t.state != states.RUNNING]
        trials = [t for t in trials if t.state == states.RUNNING]
        for t in now_ended:
            ended_rows[t.number] = records.trial_dict(t)
        rows = sorted([*ended_rows.values(), *(records.trial_dict(t) for t in trials)], key=lambda r: r["number"])

        def all_rows() -> list[dict[str, Any]]:
            return sorted([*ended_rows.values(), *(records.trial_dict(x) for x in trials)], key=lambda r: r["number"])

        for t in trials:  # the assessor
            if t.state != states.RUNNING or t.reason.startswith("pruned") or not t.intermediate:
                continue
            prune, attrs = engine.prune_decision(exp.config, rows, t.number, key=exp.id)
            if attrs != t.internal.get("system_attrs", {}):
                t.internal = {**t.internal, "system_attrs": attrs}
                rows = all_rows()
            if prune:
                t.reason = f"pruned at step {len(t.intermediate) - 1}"
                if t.job_id:
                    cancel.append(t.job_id)
        over_time = exp.config.get("max_duration") and elapsed(exp, now) >= exp.config["max_duration"]
        active = [t for t in trials if t.state == states.RUNNING]
        if over_time:
            for t in active:
                if t.job_id and t.job_id not in cancel:
                    t.reason = t.reason or "the experiment's duration is spent"
                    cancel.append(t.job_id)
        budget = 0 if over_time else exp.config["max_trials"] - len(rows)
        room = min(budget, exp.config["concurrency"] - len(active))
        for t in [*now_ended, *trials]:
            hpo_rows.save(tx, t, read[t.id])
        for _ in range(max(room, 0)):
            params, internal = engine.ask(exp.config, rows, key=exp.id)
            trial = records.new_trial(  # rows holds every trial of the experiment: the next number
                s, tx, exp, params, internal, self.jobs.workdir, self.inventory, self.jobs.backend.name, len(rows)
            )
            rows.append(records.trial_dict(trial))
            created = True
        if not active and not created and budget <= 0:
            tx.run(
                hpo_rows.DONE,
                id=exp.id,
                state=states.EXP_DONE,
                finished=now,
                used_seconds=elapsed(exp, now),
                reason="the duration is spent" if over_time else "",
            )
        return cancel, created, failed

    def _ended_rows(self, tx: Transaction, exp_id: int, running: list[TrialRow]) -> dict[int, dict[str, Any]]:
        """The rows of the experiment's ended trials, from memory when the table agrees: as many
        ended trials, the highest-numbered one among them, none of them running again; else read
        again."""
        ((count, top),) = tx.run(hpo_rows.ENDED_COUNT, id=exp_id)
        kept = self._ended.get(exp_id)
        if kept is None or len(kept) != count or (count and top not in kept) or any(t.number in kept for t in running):
            ended = hpo_rows.trials(tx, hpo_rows.ENDED, exp_id)
            kept = self._ended[exp_id] = {t.number: records.trial_dict(t) for t in ended}
        return kept
