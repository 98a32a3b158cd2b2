"""The job manager: one task per service that admits, launches and watches jobs.

A tick, every ``jobs.poll_interval`` seconds or at once when woken (a submit, cancel or retry;
an attempt's end on the local backend): an admission pass (``queue.admit_pass``; skipped when
only attempts' ends woke it, but run at least once a poll interval), a launch of each admitted
job, a poll of the running ones. The ends it finds are recorded, ``on_end`` listeners run with
each job's id (the HPO driver queues an experiment's next trial there), and a second admission
pass and launch follow in the same tick. Database work runs in worker threads; the backend's
methods are async.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from anyio import to_thread
from sqlalchemy import delete, select

from ..core.db import Database
from ..core.models import utcnow
from ..datasets.materialize import materialize
from ..datasets.models import DatasetRef
from ..datasets.storage import Storage
from ..vcs.quantities import Resources
from . import ledger, lifecycle, queue, states
from .backend import Backend, Launch, Polled, SubmissionUnknown
from .models import Job
from .reconcile import reconcile_jobs
from .spec import spec_from_dict
from .tokens import JobTokens
from .wrapper import os_cause

log = logging.getLogger(__name__)
#: launches prepared in the hop that admitted them: job id -> (launch, facts), or why not
Ready = dict[int, tuple[Launch, dict[str, Any]] | Exception]


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class JobManager:
    launch_concurrency = 8  # attempts started at once (sbatch / API calls overlap; local spawns too)

    def __init__(
        self,
        db: Database,
        storage: Storage,
        backend: Backend,
        inventory: Resources,
        data_dir: Path,
        api_url: str,
        poll_interval: float,
        tokens: JobTokens | None = None,
    ) -> None:
        self.db, self.storage, self.backend, self.inventory = db, storage, backend, inventory
        self.data_dir, self.api_url, self.poll_interval = Path(data_dir).absolute(), api_url, poll_interval
        self.tokens = tokens  # None: jobs get no hub token of their own (a service without a hub)
        self._swept = 0.0
        self._told: dict[int, tuple[str, list[str] | None]] = {}  # what the engine last said of each running job
        self._fresh: dict[int, tuple[str, list[str] | None]] = {}  # the same, of attempts started since the last poll
        # attempts started whose start could not be recorded (the database failed): recorded by a
        # later tick, never started again (the job would run twice)
        self._unrecorded: dict[int, tuple[str, dict[str, Any]]] = {}
        # attempts whose submit the engine did not answer (SubmissionUnknown): job id -> attempt;
        # looked for again (backend.adopt) each tick, submitted anew only when the engine has no trace
        self._unknown: dict[int, int] = {}
        self._no_trace: dict[int, float] = {}  # job id -> when the engine first said it had no trace
        self._sweep: asyncio.Task | None = None
        self._sweep_again = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._admit_asked = True  # a wake that may have queued work (an exit alone queues none)
        self._admitted_at = 0.0  # when the last admission pass ran (monotonic)
        backend.on_exit = lambda _ref: self._wake.set()  # an attempt ended: poll now, not at the next tick
        # called with the job's id (in a worker thread, after the end is committed) when an attempt
        # ends; what they queue is admitted next (in the tick, or on the wake that follows)
        self.on_end: list[Callable[[int], None]] = []

    def workdir(self, job_id: int) -> Path:
        return self.data_dir / "jobs" / str(job_id)

    def wake(self) -> None:
        """Run a tick now: something was queued, cancelled or freed."""
        self._admit_asked = True
        self._wake.set()

    @property
    def running(self) -> bool:
        """Whether the manager's loop runs (the dashboard's health of the job manager)."""
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        self._loop_ref = asyncio.get_running_loop()
        await reconcile_jobs(self)
        # the ledger's package list reads every installed distribution's metadata (~0.5 s) once:
        # read it now, not during the first launch
        asyncio.get_running_loop().run_in_executor(None, ledger.local_environment)
        await self.sweep_tokens()  # attempts that ended while the service was down
        self._task = asyncio.create_task(self._loop())

    async def stop(self, grace: float = 20.0) -> None:
        """Stop the loop; a tick stuck in a worker thread is waited for ``grace`` seconds, then
        left behind with its stack in the log (a shutdown never hangs on it)."""
        if self._task:
            self._task.cancel()
            done, _ = await asyncio.wait({self._task}, timeout=grace)
            if not done:
                import io

                stack = io.StringIO()
                self._task.print_stack(file=stack)
                log.warning("the job manager's tick did not stop within %s s; leaving it:\n%s", grace, stack.getvalue())
            elif not self._task.cancelled() and self._task.exception() is not None:
                log.warning("the job manager's loop ended with %r", self._task.exception())
        if self._sweep is not None and not self._sweep.done():
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._sweep), 5)
        await self.backend.close()

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:  # keep the loop alive; the next tick may succeed
                log.exception("job manager tick failed")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_interval)
            self._wake.clear()

    def _admit(self) -> list[int]:
        """An admission pass (the ids it admitted), timed for the tick's once-a-poll-interval rule."""
        self._admitted_at = time.monotonic()
        return queue.admit_pass(self.db, self.inventory)

    def _admit_then_active(self, admit: bool = True) -> list[tuple[int, str, str | None]]:
        if admit:
            self._admit()
        with self.db.fast(None) as tx:
            return tx.run(lifecycle.ACTIVE)  # type: ignore[return-value]

    def _finish_then_admit(self, ended: dict[int, Polled]) -> tuple[list[tuple[int, str, str | None]], Ready]:
        """Record the ends, let what they set off run (``on_end``: an experiment's next trial),
        then admit and prepare the launches: one worker-thread hop, so the jobs that follow start
        in the same tick."""
        for job_id, result in ended.items():
            self.finish(job_id, result, admit_follows=True)
        # only what this pass admitted is launched here: anything admitted before it was launched
        # by the tick's first pass (a launch that fails ends its job), so no query of the active jobs
        admitted = self._admit()
        return [(job_id, states.ADMITTED, None) for job_id in admitted], self._prepare_few(admitted)

    def _prepare_few(self, job_ids: list[int]) -> Ready:
        """The launches of a few admitted jobs prepared in the hop that admitted them (a burst is
        prepared by each launch, in parallel): the facts, or why the launch cannot start."""
        if len(job_ids) > self.launch_concurrency:
            return {}
        out: Ready = {}
        for job_id in job_ids:
            try:
                out[job_id] = self._prepare(job_id)
            except Exception as e:  # the launch ends the job, saying why
                out[job_id] = e
        return out

    async def _launch_admitted(self, rows: list[tuple[int, str, str | None]], prepared: Ready | None = None) -> bool:
        to_launch = [job_id for job_id, state, ref in rows if state == states.ADMITTED and ref is None]
        if to_launch:
            gate = asyncio.Semaphore(self.launch_concurrency)
            ready = prepared or {}

            async def gated(job_id: int) -> None:
                async with gate:
                    if job_id in self._unrecorded:
                        await self._record_start(job_id, *self._unrecorded[job_id])
                    elif job_id in self._unknown:
                        await self._look_again(job_id, self._unknown[job_id])
                    else:
                        await self.launch(job_id, ready.get(job_id))

            await asyncio.gather(*(gated(j) for j in to_launch))
        return bool(to_launch)

    def _tick_here(
        self, admit: bool, look: Callable[[list[str]], dict[str, Polled]]
    ) -> tuple[list[tuple[int, str, str | None]], dict[str, Polled], list[tuple[int, str, str | None]], Ready]:
        """A tick's work for a backend that polls by local reads: the admission, the active jobs,
        their attempts' files, the ends and the admission after them, in one worker-thread hop."""
        rows = self._admit_then_active(admit)
        running = _running(rows)
        polled = look(list(running)) if running else {}
        ends = _ended(running, polled)
        after, ready = self._finish_then_admit(ends) if ends else ([], {})
        return rows, polled, after, ready

    async def tick(self) -> None:
        # woken only by attempts' ends: nothing new is queued (the admission after the ends runs
        # below); else, or once a poll interval, admit first
        admit = self._admit_asked or time.monotonic() - self._admitted_at >= self.poll_interval
        self._admit_asked = False
        look = self.backend.look_many
        if look is not None:  # the whole tick in one worker-thread hop
            rows, polled, after, ready = await to_thread.run_sync(self._tick_here, admit, look)
            if self._unrecorded:
                await self._settle_unrecorded(rows)
            if self._unknown:
                await self._settle_unknown(rows)
            launched = await self._launch_admitted(rows + after, ready)
            running = _running(rows)
        else:  # the engine is asked between two hops
            rows = await to_thread.run_sync(self._admit_then_active, admit)  # one worker-thread hop for both
            if self._unrecorded:
                await self._settle_unrecorded(rows)
            if self._unknown:
                await self._settle_unknown(rows)
            launched = await self._launch_admitted(rows)
            running = _running(rows)
            polled = await self.backend.poll_many(list(running)) if running else {}
            if ends := _ended(running, polled):
                launched |= await self._launch_admitted(*await to_thread.run_sync(self._finish_then_admit, ends))
        ended = any(result.state != "running" for result in polled.values())
        if running:
            seen = {
                running[ref]: (r.reason, r.info.get("hosts") or None)
                for ref, r in polled.items()
                if r.state == "running"
            }
            news = {  # what the engine said anew (of an attempt started since the last poll: anew since its start)
                i: v for i, v in seen.items() if (self._told[i] if i in self._told else self._fresh.pop(i, None)) != v
            }
            self._told = seen
            if news:
                await to_thread.run_sync(self._engine_news, news)
        every = 60.0
        if self.tokens is not None and self.tokens.spares_waiting():  # spares are revoked once they are old
            every = max(self.tokens.spare_age, 1.0)
        if ended or launched or time.monotonic() - self._swept > every:
            self.sweep_soon()

    def sweep_soon(self) -> None:
        """Revoke ended attempts' tokens in the background: a hub call must not hold up the next
        admission and launch (one sweep at a time; a request during one runs another after it)."""
        if self._sweep is not None and not self._sweep.done():
            self._sweep_again = True
            return

        async def sweeps() -> None:
            self._sweep_again = True
            while self._sweep_again:
                self._sweep_again = False
                await self.sweep_tokens()

        self._sweep = asyncio.create_task(sweeps())

    async def sweep_tokens(self) -> None:
        """Revoke the hub token of every attempt that is no longer admitted or running."""
        if self.tokens is None:
            return
        self._swept = time.monotonic()

        def active() -> set[tuple[int, int]]:
            with self.db.session() as s:
                return {(i, a) for i, a in s.execute(select(Job.id, Job.attempts).where(Job.state.in_(states.ACTIVE)))}

        async def running() -> set[tuple[int, int]]:
            return await to_thread.run_sync(active)

        try:
            await self.tokens.sweep(running)
        except Exception:  # the next sweep tries again; the tokens expire on their own
            log.exception("revoking job tokens failed")

    def _engine_news(self, seen: dict[int, tuple[str, list[str] | None]]) -> None:
        """What the engine says of a started attempt becomes the job's: its ``reason`` ("waiting
        for Kueue admission", Slurm's pending reason; cleared once the engine says nothing) and
        its ``hosts`` once the engine has placed it."""
        with self.db.session() as s:
            current = {
                i: (r, h)
                for i, r, h in s.execute(select(Job.id, Job.reason, Job.hosts).where(Job.id.in_(list(seen)))).all()
            }
        changed = {}
        for i, (reason, hosts) in seen.items():
            if i not in current:
                continue
            old_reason, old_hosts = current[i]
            new_reason = old_reason if old_reason.startswith("cancelling") else reason
            new_hosts = hosts if hosts is not None else old_hosts
            if (new_reason, new_hosts) != (old_reason, old_hosts):
                changed[i] = (new_reason, new_hosts)
        if not changed:
            return
        with self.db.locked("~jobs") as s:
            for job in s.scalars(select(Job).where(Job.id.in_(list(changed)), Job.state == states.RUNNING)):
                job.reason, job.hosts = changed[job.id]

    # ---- launch ----

    def _prepare(self, job_id: int) -> tuple[Launch, dict[str, Any]]:
        token = secrets.token_urlsafe(32)
        with self.db.fast("~jobs") as tx:
            row = tx.one(lifecycle.PREPARE, id=job_id)  # the job and its VC's quota in one statement
            if row is None:
                raise LookupError(f"job {job_id} is gone")
            tx.run(lifecycle.SET_TOKEN, id=job_id, token_hash=token_hash(token))
        facts, vc_quota = _facts(row[:-1]), row[-1]
        spec = spec_from_dict(facts["spec"])
        paths = {i["mount"]: str(materialize(self.storage, i["manifest"])) for i in facts["inputs"]}
        for i in facts["inputs"]:
            i["path"] = paths[i["mount"]]
        code_path = Path(facts["code"].get("path") or "")
        cwd = code_path if facts["code"].get("path") and code_path.is_dir() else self.workdir(job_id)
        self.workdir(job_id).mkdir(parents=True, exist_ok=True)
        env = {"YITONG_JOB_TOKEN": token, "YITONG_API_URL": self.api_url, "YITONG_ATTEMPT": str(facts["attempt"])}
        launch = Launch(
            job_id,
            facts["attempt"],
            spec,
            self.workdir(job_id),
            cwd,
            env,
            paths,
            facts["visible"],
            vc_quota=dict(vc_quota) if vc_quota is not None else None,
            user=facts["job"]["user"],
        )
        return launch, facts

    def adopted(self, job_id: int, ref: str) -> None:
        """A running attempt found again after a restart (reconcile.py): record it as started."""
        self._started(job_id, ref, self._facts_of(job_id))

    def _started(self, job_id: int, ref: str, facts: dict[str, Any]) -> tuple[bool, str]:
        described = self.backend.describe(ref)
        started = utcnow()
        with self.db.fast("~jobs") as tx:
            row = tx.one(lifecycle.START_STATE, id=job_id)
            if row is None:
                raise LookupError(f"job {job_id} is gone")
            state, cancel_requested, reason = row
            tx.run(
                lifecycle.START,
                id=job_id,
                backend_ref=ref,
                state=states.check_move(state, states.RUNNING),
                started=started,
                hosts=described.get("hosts", []),
                ports=described.get("ports", {}),
            )
            ((run_id,),) = tx.run(
                lifecycle.NEW_RUN, job_id=job_id, attempt=facts["attempt"], record={}, metrics={}, created=started
            )
            record = ledger.start_record(
                run_id=run_id,
                job=facts["job"],
                attempt=facts["attempt"],
                spec=facts["spec"],
                inputs=facts["inputs"],
                code=facts["code"],
                environment=ledger.environment(facts["spec"]),
                devices=ledger.device_info(facts["spec"], facts["visible"]),
                backend=self.backend.name,
                started=started.isoformat(),
            )
            tx.run(lifecycle.SET_RECORD, id=run_id, record=record)
            return cancel_requested, reason

    async def launch(self, job_id: int, prepared: tuple[Launch, dict[str, Any]] | Exception | None = None) -> None:
        """Start an admitted job's attempt (``prepared``: its :meth:`_prepare`, when done already)."""
        try:
            if isinstance(prepared, Exception):
                raise prepared
            if prepared is None:
                prepared = await to_thread.run_sync(self._prepare, job_id)
            launch, facts = prepared
            if self.tokens is not None and launch.spec.hub_token:  # the owner's short-lived token, never the service's
                mint = self.tokens.mint(job_id, facts["attempt"], launch.user, launch.spec)
                if self.backend.late_env:  # the hub call overlaps the start of the attempt's process
                    launch.late_env = asyncio.ensure_future(mint)
                else:
                    launch.env.update(await mint)
            try:
                ref = await self.backend.submit(launch)
            finally:
                if launch.late_env is not None and not launch.late_env.done():
                    launch.late_env.cancel()
        except SubmissionUnknown as e:  # not a failure: it may be queued; looked for before any new submit
            await self.submission_unknown(job_id, launch.attempt, str(e))
            return
        except Exception as e:
            log.exception("job %s could not be started", job_id)
            await to_thread.run_sync(
                self.finish, job_id, Polled("failed", None, f"could not start: {start_failure(e)}")
            )
            return
        await self._record_start(job_id, ref, facts)

    async def submission_unknown(self, job_id: int, attempt: int, why: str) -> None:
        """Keep an attempt whose submit (or look-up) the engine did not answer: the job stays
        admitted, its reason says so, and each tick looks for the attempt (:meth:`_look_again`)."""
        log.warning("job %s attempt %s: submission unknown (%s); looking for it again", job_id, attempt, why)
        self._unknown[job_id] = attempt
        reason = f"submission unknown: {why}; looked for again before it is submitted anew"
        await to_thread.run_sync(self._say, job_id, reason)

    def _say(self, job_id: int, reason: str) -> None:
        """The reason of an admitted job (not yet started), unless it is being cancelled."""
        with self.db.locked("~jobs") as s:
            job = s.get(Job, job_id)
            if job is not None and job.state == states.ADMITTED and not job.cancel_requested:
                job.reason = reason

    async def _look_again(self, job_id: int, attempt: int) -> None:
        """An unknown submission: recorded as started when the engine has it, submitted anew when
        the engine answers with no trace of it, left unknown while it still cannot be asked; on
        an engine whose submit is idempotent, submitted again (it reuses what the first made)."""
        if self.backend.idempotent_submit:
            del self._unknown[job_id]
            await self.launch(job_id)
            return
        try:
            ref = await self.backend.adopt(job_id, attempt)
        except SubmissionUnknown as e:
            await to_thread.run_sync(self._say, job_id, f"submission unknown: {e}; looked for again")
            return
        if ref is None:
            first = self._no_trace.setdefault(job_id, time.monotonic())
            if time.monotonic() - first < self.backend.unknown_settle:
                return  # a request the engine took in while it did not answer may still show up
            del self._unknown[job_id], self._no_trace[job_id]
            log.info("job %s attempt %s: the engine has no trace of it; submitting it", job_id, attempt)
            await self.launch(job_id)
            return
        del self._unknown[job_id]
        self._no_trace.pop(job_id, None)
        log.info("job %s attempt %s was submitted after all: %s", job_id, attempt, ref)
        facts = await to_thread.run_sync(self._facts_of, job_id)
        await self._record_start(job_id, ref, facts)

    async def _settle_unknown(self, rows: list[tuple[int, str, str | None]]) -> None:
        """Of the unknown submissions (``rows``: every active job): those whose job no longer
        waits for its start (cancelled meanwhile) are stopped if the engine has them, and
        forgotten once the engine has answered."""
        waiting = {job_id for job_id, state, ref in rows if state == states.ADMITTED and ref is None}
        for job_id in [j for j in self._unknown if j not in waiting]:
            try:
                ref = await self.backend.adopt(job_id, self._unknown[job_id])
            except SubmissionUnknown:
                continue  # asked again next tick
            if ref is None and time.monotonic() - self._no_trace.setdefault(job_id, time.monotonic()) < (
                self.backend.unknown_settle
            ):
                continue  # it may still show up: looked for again
            del self._unknown[job_id]
            self._no_trace.pop(job_id, None)
            if ref is not None:
                log.warning("job %s ended while its submission was unknown: stopping %s", job_id, ref)
                try:
                    await self.backend.cancel(ref)
                except Exception:
                    log.exception("job %s: its attempt %s could not be stopped", job_id, ref)

    def _facts_of(self, job_id: int) -> dict[str, Any]:
        with self.db.session() as s:
            return _facts(s.execute(select(*lifecycle.FACTS).where(Job.id == job_id)).one())

    async def _record_start(self, job_id: int, ref: str, facts: dict[str, Any]) -> None:
        """Record a started attempt. When that fails (the database), the attempt runs on: it is
        kept in ``_unrecorded`` and the next ticks record it instead of starting the job again."""
        try:
            cancelled, reason = await to_thread.run_sync(self._started, job_id, ref, facts)
        except Exception:
            log.exception("job %s: its attempt %s started but could not be recorded; recording it again", job_id, ref)
            self._unrecorded[job_id] = (ref, facts)
            return
        self._unrecorded.pop(job_id, None)
        self._fresh[job_id] = (reason, None)  # the engine saying nothing of it is no news
        if cancelled:
            await self.backend.cancel(ref)  # cancelled while it was being started

    async def _settle_unrecorded(self, rows: list[tuple[int, str, str | None]]) -> None:
        """Of the attempts not yet recorded: forget those recorded after all (the failure came
        after the commit), stop those whose job no longer waits for its start (ended meanwhile)."""
        now = {job_id: (state, ref) for job_id, state, ref in rows}
        for job_id, (ref, _facts) in list(self._unrecorded.items()):
            state, recorded = now.get(job_id, (None, None))
            if state == states.ADMITTED and recorded is None:
                continue  # this tick records it
            del self._unrecorded[job_id]
            if recorded != ref:
                log.warning("job %s is %s: stopping its unrecorded attempt %s", job_id, state or "gone", ref)
                try:
                    await self.backend.cancel(ref)
                except Exception:
                    log.exception("job %s: its unrecorded attempt %s could not be stopped", job_id, ref)

    # ---- end ----

    def finish(self, job_id: int, polled: Polled, admit_follows: bool = False) -> str:
        """Record the end of an attempt, release its allocation, retry if the spec says so; then
        tell ``on_end``. ``admit_follows``: the caller runs an admission pass next (the tick)."""
        state = self._finish(job_id, polled)
        if state == "unchanged":
            return state
        self._fresh.pop(job_id, None)
        for listener in self.on_end:
            try:
                listener(job_id)
            except Exception:  # the end is recorded; a listener's pass runs again on its own
                log.exception("a listener of job %s's end failed", job_id)
        if not admit_follows:
            self.wake_threadsafe()  # its allocation is free (and a retry or a next trial may be queued)
        return state

    def _finish(self, job_id: int, polled: Polled) -> str:
        with self.db.fast("~jobs") as tx:
            row = tx.one(lifecycle.END_STATE, id=job_id)
            if row is None or row[0] not in states.ACTIVE:
                return "unchanged"
            state, cancel_requested, spec, attempts, inputs = row
            if polled.state == "vanished":
                new, reason = (states.CANCELLED, "cancelled") if cancel_requested else (states.FAILED, polled.reason)
            else:
                new = states.final_state(polled.exit_code, cancel_requested)
                reason = (
                    "cancelled"
                    if new == states.CANCELLED
                    else polled.reason or (f"exit code {polled.exit_code}" if new == states.FAILED else "")
                )
            state, finished = states.check_move(state, new), utcnow()
            tx.run(lifecycle.FREE, ref=str(job_id))
            run = tx.one(lifecycle.RUN_OF, id=job_id, attempt=attempts)
            if run is not None:
                run_id, record, metrics = run
                # what the job wrote to its result fd (the wrapper's exit record) joins its metrics,
                # within a run's bounds as a POST's would (past them it is dropped, as a bad one is)
                if result := ledger.result_metrics(polled.info.get("result")):
                    with contextlib.suppress(ValueError):
                        metrics = ledger.merged_metrics(job_id, metrics, result)
                outputs = self.workdir(job_id) / spec.get("outputs", "outputs")
                record = ledger.finish_record(
                    record,
                    state=new,
                    exit_code=polled.exit_code,
                    finished=finished.isoformat(),
                    metrics=metrics,
                    artifacts=ledger.artifacts(outputs),
                )
                tx.run(lifecycle.SET_RECORD_METRICS, id=run_id, record=record, metrics=metrics)
            retries = int(spec.get("retries") or 0)
            end = lifecycle.END
            if new == states.FAILED and attempts <= retries:
                state = states.check_move(state, states.QUEUED)
                reason = f"retrying ({reason}); attempt {attempts + 1} of {retries + 1}"
                end = lifecycle.RETRY
            elif inputs:  # its input versions are pinned until it ends (records.pin_inputs)
                tx.run(lifecycle.UNPIN, ref=str(job_id))
            tx.run(end, id=job_id, state=state, reason=reason, exit_code=polled.exit_code, finished=finished)
            log.info("job %s: %s (%s)", job_id, state, reason)
            return state

    def wake_threadsafe(self) -> None:
        loop = getattr(self, "_loop_ref", None)
        if loop is not None:
            loop.call_soon_threadsafe(self.wake)

    async def cancel(self, job_id: int) -> None:
        def mark() -> str | None:
            with self.db.locked("~jobs") as s:
                job = s.get(Job, job_id)
                if job.state == states.QUEUED:
                    job.state, job.reason, job.finished = states.CANCELLED, "cancelled", utcnow()
                    s.execute(delete(DatasetRef).where(DatasetRef.kind == "job", DatasetRef.ref == str(job.id)))
                    return None
                if job.state in states.ACTIVE:
                    job.cancel_requested = True
                    job.reason = "cancelling"
                    return job.backend_ref
                return None

        ref = await to_thread.run_sync(mark)
        if ref:
            await self.backend.cancel(ref)
        self.wake()


def _running(rows: list[tuple[int, str, str | None]]) -> dict[str, int]:
    """``backend ref -> job id`` of the active jobs' rows that have an attempt started."""
    return {ref: job_id for job_id, _state, ref in rows if ref}


def _ended(running: dict[str, int], polled: dict[str, Polled]) -> dict[int, Polled]:
    """``job id -> result`` of the polled attempts that are no longer running."""
    return {running[ref]: result for ref, result in polled.items() if result.state != "running"}


def _facts(row: Sequence[Any]) -> dict[str, Any]:
    """What a launch and the ledger need of a job, from its :data:`lifecycle.FACTS` columns."""
    job_id, name, vc, user, attempts, spec, inputs, code, devices = row
    return {
        "job": {"id": job_id, "name": name, "vc": vc, "user": user},
        "attempt": attempts,
        "spec": spec,
        "inputs": [dict(i) for i in inputs],
        "code": dict(code),
        "visible": list((devices or {}).get("visible") or []),
    }


def start_failure(e: BaseException) -> str:
    """Why a launch could not start, for the job's reason (pure): a disk that takes nothing more
    in words (the server's path it names stays in the log); anything else as it says itself."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
        return os_cause(e)
    return str(e)
