"""Experiments (hyperparameter search): create (our document or an NNI v2 config), list, detail
with trials, stop, resume, extend, clone, parameter importance."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
from typing import Any, Literal

from fastapi import APIRouter, Body, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sqlalchemy import select

from ..core import audit
from ..core.authz import Identity, Person
from ..core.context import Context
from ..core.errors import Refusal
from ..core.idempotency import Claim, once
from ..core.limits import MAX_DEPTH
from ..core.models import utcnow
from ..core.paging import json_response
from ..hpo import channel, engine, records, states
from ..hpo.driver import MAX_STEPS, Driver, elapsed
from ..hpo.models import Experiment, Trial
from ..hpo.nni_config import NniConfigError, from_nni
from ..hpo.schemas import MAX_TRIALS
from ..jobs import records as job_records
from ..jobs.models import Job
from ..vcs.models import VC
from .common import Caller, Ctx, Id, Member, as_person

router = APIRouter(prefix="/experiments", tags=["experiments"])
BODY = {
    "requestBody": {
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "application/yaml": {"schema": {"type": "string", "description": "with ?from=nni: an NNI v2 config"}},
        }
    }
}


def driver(request: Request) -> Driver:
    return request.app.state.hpo


def _create_row(
    ctx: Context, caller: Identity, request: Request, person: Person, spec: Any, notes: list[str], claim: Claim | None
) -> dict:
    with ctx.db.writing() as s:
        if claim is not None:  # a retry of a stored create replays its answer (idempotency.py)
            claim.check(s)
        exp = records.create(s, person, spec)
        audit.record(s, caller, request, "experiment.create", f"experiment {exp.id}", owner=person.name)
        out = records.experiment_dict(exp, []) | {"notes": notes, "warnings": records.warnings(s, person, spec)}
        return claim.store(s, 201, out) if claim is not None else out


async def _create(
    request: Request, ctx: Context, caller: Identity, doc: Any, notes: list[str], claim: Claim | None = None
) -> dict:
    spec = records.parse(doc)
    out = await run_in_threadpool(_create_row, ctx, caller, request, as_person(caller), spec, notes, claim)
    driver(request).wake()
    return out


@router.post("", status_code=201, openapi_extra=BODY)
async def create(
    request: Request,
    caller: Caller,
    ctx: Ctx,
    source: str | None = Query(None, alias="from", description="nni: the body is an NNI v2 config (YAML or JSON)"),
    vc: str | None = Query(None, max_length=32, description="the VC (required with from=nni)"),
    name: str | None = Query(None, max_length=32),
) -> dict:
    """Create an experiment: a search space (NNI's format), tuner, optional assessor, objective, concurrency, max_trials, max_duration and a trial ``template`` (a job spec without name and vc); or with ``?from=nni&vc=`` an NNI v2 config whose ``searchSpace`` is inlined. Trials start at once. ``warnings``: sentences such as ``concurrency`` trials that cannot run at once within the VC's quota and the caller's per-user caps beside their running server. 422 names what is wrong (an unsupported tuner names the nearest supported one); 404 unknown VC or not a member. Accepts ``Idempotency-Key`` as ``POST /jobs`` does."""
    if source not in (None, "nni"):
        raise Refusal(422, f"from: {source!r} is not a known format; use nni")

    async def make(claim: Claim | None) -> dict:
        doc = job_records._doc(await request.body(), request.headers.get("content-type", ""), MAX_DEPTH)
        notes: list[str] = []
        if source == "nni":
            if not vc:
                raise Refusal(422, "vc: required with from=nni (an NNI config names no VC)")
            # a kernel trial on the local and Slurm backends runs the platform's Python: this one
            backend = request.app.state.jobs.backend.name
            importable = _importable if backend in ("local", "slurm") else None
            try:
                doc, notes = await run_in_threadpool(from_nni, doc, vc, name, importable)
            except NniConfigError as e:
                raise Refusal(422, str(e)) from None
        return await _create(request, ctx, caller, doc, notes, claim)

    return await once(request, ctx, caller.name, "POST /experiments", make)


def _importable(module: str) -> bool:
    """Whether the platform's Python finds ``module`` (a top-level name: found, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@router.post("/trials/{job_id}/report")
def report(
    job_id: Id,
    request: Request,
    ctx: Ctx,
    kind: Literal["intermediate", "final"] = Body(..., alias="type", embed=True),
    value: float | dict[str, float] = Body(..., embed=True),
    step: int | None = Body(None, embed=True, ge=0, le=MAX_STEPS, description="the intermediate result's index"),
) -> dict:
    """The trial's job itself (``Authorization: token $YITONG_JOB_TOKEN``): an intermediate result (one step for the assessor; with ``step``, a retry of a stored step is ignored) or the final result; a number or a map holding the objective's metric. 401 without the job's token; 409 when the trial has ended."""
    header = request.headers.get("authorization", "")
    token = header.split(None, 1)[1].strip() if " " in header else ""
    with ctx.db.writing() as s:
        job = s.get(Job, job_id)
        digest = hashlib.sha256(token.encode()).hexdigest()
        if job is None or not token or not hmac.compare_digest(digest, job.token_hash or ""):
            raise Refusal(401, f"a valid token of job {job_id} is required")
        trial = s.scalar(select(Trial).where(Trial.job_id == job_id).with_for_update())
        if trial is None:
            raise Refusal(404, f"job {job_id} is not a trial of an experiment")
        if trial.state != states.RUNNING:
            raise Refusal(409, f"trial {trial.number} is already {trial.state}")
        metric = s.get(Experiment, trial.experiment_id).config["objective"]["metric"]
        number = channel.metric_value(value, metric)
        if number is None:
            raise Refusal(422, f"value: a finite number, or a map with {metric!r} holding one")
        if kind == "final":
            trial.value = number
        elif step is not None and step < len(trial.intermediate):
            pass  # a retry of a step already stored
        elif len(trial.intermediate) < MAX_STEPS:
            trial.intermediate = [*trial.intermediate, number]
        else:
            raise Refusal(422, f"trial {trial.number} has {MAX_STEPS} intermediate results already")
        out = {"trial": trial.number, "steps": len(trial.intermediate), "value": trial.value}
    driver(request).wake_threadsafe()  # a worker thread: wake the driver on its event loop
    return out


@router.get("")
def list_experiments(
    person: Member, ctx: Ctx, request: Request, vc: str | None = Query(None, max_length=32)
) -> Response:
    """Experiments of the caller's VCs (admins: all), newest first, with trial counts and the best trial. Answers carry an ``ETag``; ``If-None-Match`` with it gets 304."""
    with ctx.db.session() as s:
        groups = {v.name: v.groups for v in s.scalars(select(VC))}
        query = select(Experiment).order_by(Experiment.id.desc())
        if vc:
            query = query.where(Experiment.vc == vc)
        out = []
        for exp in s.scalars(query):
            if person.admin or set(person.groups) & set(groups.get(exp.vc, [])):
                out.append(records.summary(s, exp))
    return json_response(request, out)


@router.get("/{experiment_id}")
def get_experiment(
    experiment_id: Id,
    person: Member,
    ctx: Ctx,
    request: Request,
    points: int = Query(
        1000,
        ge=1,
        le=records.MAX_POINTS,
        description="most points of each trial's intermediate curve; a longer curve is thinned evenly (first and last kept) and its kept step numbers are in ``intermediate_steps``",
    ),
    trials: bool = Query(
        True, description="false: only the counts per state and the best trial (what a progress bar polls)"
    ),
) -> Response:
    """One experiment with its trials (number, job id, state, reason, params, intermediate values and their count ``steps``, final value, created, finished), counts per state, the best trial and the best-so-far curve. Answers carry an ``ETag``; ``If-None-Match`` with it gets 304 (the Experiments view polls so)."""
    with ctx.db.session() as s:
        exp = records.visible(s, person, experiment_id)
        if trials:
            out = records.experiment_dict(exp, records.rows(s, exp.id), points=points)
        else:
            out = records.summary(s, exp)
    return json_response(request, out)


@router.get("/{experiment_id}/importance")
def importance(experiment_id: Id, person: Member, ctx: Ctx, request: Request) -> Response:
    """Parameter importance over the complete trials (Optuna's fANOVA evaluator, computed again only when the complete trials change); empty below two complete trials. Answers carry an ``ETag``."""
    with ctx.db.session() as s:
        exp = records.visible(s, person, experiment_id)
        config, rows = exp.config, records.rows(s, exp.id)
    return json_response(request, {"importance": engine.importance_cached(experiment_id, config, rows)})


def _stop(ctx: Context, caller: Identity, person: Person, request: Request, experiment_id: int) -> list[int]:
    with ctx.db.locked("~jobs") as s:
        exp = records.visible(s, person, experiment_id)
        records.require_owner(person, exp, "stop")
        if exp.state != states.EXP_RUNNING:
            raise Refusal(409, f"experiment {experiment_id} is {exp.state}")
        exp.used_seconds, exp.state, exp.reason = elapsed(exp, utcnow()), states.EXP_STOPPED, "stopped"
        audit.record(s, caller, request, "experiment.stop", f"experiment {exp.id}", owner=exp.user)
        running = s.scalars(select(Trial).where(Trial.experiment_id == exp.id, Trial.state == states.RUNNING))
        return [t.job_id for t in running if t.job_id]


def _settle(ctx: Context, experiment_id: int) -> dict:
    with ctx.db.session() as s:
        exp = s.get(Experiment, experiment_id)
        return records.experiment_dict(exp, records.rows(s, exp.id))


@router.post("/{experiment_id}/stop")
async def stop(experiment_id: Id, caller: Caller, person: Member, ctx: Ctx, request: Request) -> dict:
    """Owner or admin: stop; running trials' jobs are cancelled (their trials end ``cancelled``). 409 when not running."""
    for job_id in await run_in_threadpool(_stop, ctx, caller, person, request, experiment_id):
        await request.app.state.jobs.cancel(job_id)
    driver(request).wake()
    return await run_in_threadpool(_settle, ctx, experiment_id)


@router.post("/{experiment_id}/resume")
def resume(experiment_id: Id, caller: Caller, person: Member, ctx: Ctx, request: Request) -> dict:
    """Owner or admin: run a stopped (or done, after extend) experiment again; trials that were cancelled by the stop are ended and new ones drawn. 409 when running."""
    with ctx.db.writing() as s:
        exp = records.visible(s, person, experiment_id)
        records.require_owner(person, exp, "resume")
        if exp.state == states.EXP_RUNNING:
            raise Refusal(409, f"experiment {experiment_id} is already running")
        exp.state, exp.reason, exp.resumed, exp.finished = states.EXP_RUNNING, "", utcnow(), None
        audit.record(s, caller, request, "experiment.resume", f"experiment {exp.id}", owner=exp.user)
    driver(request).wake_threadsafe()
    return _settle(ctx, experiment_id)


@router.post("/{experiment_id}/extend")
def extend(
    experiment_id: Id,
    caller: Caller,
    person: Member,
    ctx: Ctx,
    request: Request,
    trials: int = Body(..., embed=True, ge=1, le=MAX_TRIALS, description="trials to add to the budget"),
) -> dict:
    """Owner or admin: add ``trials`` to the trial budget (a done experiment then needs resume)."""
    with ctx.db.writing() as s:
        exp = records.visible(s, person, experiment_id)
        records.require_owner(person, exp, "extend")
        total = exp.config["max_trials"] + trials
        if total > MAX_TRIALS:
            raise Refusal(422, f"trials: the budget would be {total}; at most {MAX_TRIALS}")
        exp.config = {**exp.config, "max_trials": total}
        audit.record(s, caller, request, "experiment.extend", f"experiment {exp.id}", owner=exp.user)
    driver(request).wake_threadsafe()
    return _settle(ctx, experiment_id)


def _config(ctx: Context, person: Person, experiment_id: int) -> dict:
    with ctx.db.session() as s:
        return dict(records.visible(s, person, experiment_id).config)


@router.post("/{experiment_id}/clone", status_code=201)
async def clone(
    experiment_id: Id,
    caller: Caller,
    person: Member,
    ctx: Ctx,
    request: Request,
    patch: dict[str, Any] = Body(default_factory=dict, embed=True),
) -> dict:
    """A new experiment (the caller owns it) from this one's document with ``patch``'s top-level fields replaced (e.g. ``{"patch": {"space": {...}}}``). Accepts ``Idempotency-Key``."""

    async def make(claim: Claim | None) -> dict:
        doc = await run_in_threadpool(_config, ctx, person, experiment_id)
        return await _create(request, ctx, caller, {**doc, **patch}, [], claim)

    return await once(request, ctx, caller.name, "POST /experiments/{id}/clone", make)
