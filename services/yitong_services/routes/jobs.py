"""Jobs: submit (JSON, YAML or an imported document), list, detail, cancel, retry, clone, metrics."""

from __future__ import annotations

import copy
import hashlib
import hmac
from typing import Annotated, Any

import anyio.from_thread
from fastapi import APIRouter, Body, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from sqlalchemy import select

from ..core import audit
from ..core.auth import person_for
from ..core.authz import Identity, Person
from ..core.context import Context
from ..core.db import Database
from ..core.errors import Refusal
from ..core.idempotency import Claim, once
from ..core.limits import MAX_ID
from ..core.paging import Page, Paging, bytes_response, encoded, page_content, wants_envelope
from ..hpo import records as trials
from ..jobs import ledger, records, states
from ..jobs.events import stream
from ..jobs.listing import page_of_jobs, watchable
from ..jobs.manager import JobManager
from ..jobs.models import Job, Run
from ..jobs.queue import positions
from ..jobs.schemas import JobDetail, JobOut, JobPreview, JobSubmitted, RunMetrics
from ..jobs.spec import JobSpec, per_job_resources, spec_from_dict
from .common import Caller, Ctx, Id, Member

router = APIRouter(prefix="/jobs", tags=["jobs"])
SUBMIT_BODY = {
    "requestBody": {
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "application/yaml": {"schema": {"type": "string"}},
        }
    }
}


async def manager(request: Request) -> JobManager:
    return request.app.state.jobs


Jobs = Annotated[JobManager, Depends(manager)]


def _create(
    ctx: Context,
    caller: Identity,
    request: Request,
    person: Person,
    spec: JobSpec,
    code: dict,
    notes: list[str],
    claim: Claim | None,
    backend: str,
) -> dict:
    with ctx.db.locked("~jobs") as s:
        if claim is not None:  # a retry of a stored submit replays its answer (idempotency.py)
            claim.check(s)
        job = records.create(s, person, spec, code, ctx.inventory, backend)
        audit.record(s, caller, request, "job.submit", f"job {job.id}", owner=person.name, detail={"vc": job.vc})
        out = records.job_dict(job) | {"notes": notes}
        return claim.store(s, 201, out) if claim is not None else out


async def submit_spec(
    request: Request,
    ctx: Context,
    caller: Identity,
    spec: JobSpec,
    code: dict,
    user: str | None,
    notes: list[str],
    claim: Claim | None = None,
) -> dict:
    if user is not None and not isinstance(user, str):
        raise Refusal(422, "user: must be a user name (a string); only admins and the platform may name one")
    person = await person_for(ctx, caller, user)
    mgr: JobManager = request.app.state.jobs
    out = await run_in_threadpool(_create, ctx, caller, request, person, spec, code, notes, claim, mgr.backend.name)
    mgr.wake()
    return out


@router.post("", status_code=201, openapi_extra=SUBMIT_BODY, response_model=JobSubmitted)
async def submit(
    request: Request,
    caller: Caller,
    ctx: Ctx,
    source: str | None = Query(None, alias="from", description="openpai | pytorchjob"),
    vc: str | None = Query(None, description="the VC (overrides the document's)"),
) -> Any:
    """Submit a job: a spec as JSON or YAML (plus optional ``code: {commit, dirty_hash, path}`` and, for the service, ``user``), or with ``?from=openpai|pytorchjob`` another system's document; ``notes`` lists unmapped fields. 422 names bad fields; 403 not a member; 404 unknown VC or dataset; nothing is queued on refusal. With an ``Idempotency-Key`` header, a retry of the same request gets the first answer again (``Idempotent-Replayed: true``) and queues nothing; the same key with another request is a 422."""

    async def create(claim: Claim | None) -> dict:
        spec, code, user, notes = records.parse_submission(
            await request.body(), request.headers.get("content-type", ""), source, vc
        )
        return await submit_spec(request, ctx, caller, spec, code, user, notes, claim)

    return await once(request, ctx, caller.name, "POST /jobs", create)


def _preview(ctx: Context, person: Person, spec: JobSpec, notes: list[str], backend: str) -> dict:
    with ctx.db.session() as s:
        vc, _ = records.check(s, person, spec, ctx.inventory, backend, fit=False)
    refused = records.unfit(person, spec, ctx.inventory, backend, vc)
    return {
        "spec": spec.model_dump(mode="json"),
        "notes": notes,
        "resources": per_job_resources(spec),
        "refused": refused,
    }


@router.post("/preview", openapi_extra=SUBMIT_BODY, response_model=JobPreview)
async def preview(
    request: Request,
    caller: Caller,
    ctx: Ctx,
    source: str | None = Query(None, alias="from", description="openpai | pytorchjob"),
    vc: str | None = Query(None, description="the VC (overrides the document's)"),
) -> Any:
    """A dry run of ``POST /jobs`` (same body and parameters): the spec the document becomes, every note and what the job would hold, after every check a submit makes (VC membership, datasets); nothing is queued. A job this cluster or VC could never run (its devices, node count, quota, user cap) still gets its spec, with the reason a submit would be refused in ``refused``. ``yt job submit --dry-run`` shows this."""
    spec, _code, user, notes = records.parse_submission(
        await request.body(), request.headers.get("content-type", ""), source, vc
    )
    if user is not None and not isinstance(user, str):
        raise Refusal(422, "user: must be a user name (a string); only admins and the platform may name one")
    person = await person_for(ctx, caller, user)
    mgr: JobManager = request.app.state.jobs
    return await run_in_threadpool(_preview, ctx, person, spec, notes, mgr.backend.name)


@router.get("", response_model=list[JobOut])
async def list_jobs(
    person: Member,
    ctx: Ctx,
    request: Request,
    page: Paging,
    vc: str | None = Query(None, max_length=64),
    state: str | None = Query(None, max_length=16),
    user: str | None = Query(None, max_length=255),
) -> Response:
    """Jobs of the caller's VCs (admins: all), newest first; filter with ``?vc=``, ``?state=``, ``?user=``; page with ``?offset=&limit=`` (``Accept: application/jupyterhub-pagination+json`` for the hub's envelope with the total). Queued jobs carry ``position`` and ``reason``. Answers carry an ``ETag``; ``If-None-Match`` with it gets 304."""
    # what decides the answer: who may see which VCs (admin flag, groups) and the query
    as_envelope = wants_envelope(request)
    key = ("jobs", person.admin, frozenset(person.groups), vc, state, user, page, as_envelope)
    body, etag, headers = await ctx.db.reads.read(key, _page_answer, ctx.db, person, page, vc, state, user, as_envelope)
    return bytes_response(request, body, etag, headers)


def _page_answer(
    db: Database, person: Person, page: Page, vc: str | None, state: str | None, user: str | None, as_envelope: bool
) -> tuple[bytes, str, dict[str, str]]:
    """The page's bytes, their ETag and headers (kept by the read cache: encoded once, not per request)."""
    items, total = page_of_jobs(db, person, page, vc, state, user)
    content, headers = page_content(items, total, page, as_envelope)
    return (*encoded(content), headers)


@router.get("/events", response_class=StreamingResponse, responses={200: {"content": {"text/event-stream": {}}}})
def job_events(
    person: Member,
    ctx: Ctx,
    request: Request,
    job: int | None = Query(None, ge=1, le=MAX_ID, description="only this job's changes"),
    seconds: float = Query(300.0, ge=0, le=3600, description="end the stream after this long (clients reconnect)"),
) -> StreamingResponse:
    """Server-sent events: ``ready`` once watching, then a ``job`` event (``{id, vc, user, state, reason, attempts, position}``) each time a job of the caller's VCs (admins: all) changes state, reason, attempts or queue position; ``resync`` when events were dropped (GET ``/jobs`` again). Push instead of polling ``GET /jobs``."""
    vcs = watchable(ctx.db, person, job)
    return StreamingResponse(
        stream(request.app.state.job_feed, vcs, job, seconds),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _detail(ctx: Context, mgr: JobManager, person: Person, job_id: int) -> dict:
    with ctx.db.session() as s:
        job = records.visible(s, person, job_id)
        out = records.job_dict(job, None, records.run_ids(s, job.id))
    if out["state"] == states.QUEUED:  # outside the session: it holds a pooled connection
        out["position"] = positions(ctx.db, [job_id]).get(job_id)
    out["access"] = mgr.backend.describe(out["backend_ref"]).get("access") if out["backend_ref"] else None
    out["outputs_path"] = str(mgr.workdir(job_id) / out["spec"].get("outputs", "outputs"))
    return out


async def _detail_with_ranks(ctx: Context, mgr: JobManager, person: Person, job_id: int) -> dict:
    out = await run_in_threadpool(_detail, ctx, mgr, person, job_id)
    out["ranks"] = await mgr.backend.ranks(out["backend_ref"]) if out["backend_ref"] else []
    return out


def _detail_answer(ctx: Context, mgr: JobManager, person: Person, job_id: int) -> tuple[bytes, str]:
    """The whole detail as the route answers it, encoded, with its ETag (ranks read in this worker thread)."""
    out = _detail(ctx, mgr, person, job_id)
    out["ranks"] = anyio.from_thread.run(mgr.backend.ranks, out["backend_ref"]) if out["backend_ref"] else []
    return encoded(JobDetail.model_validate(out).model_dump(mode="json"))


@router.get("/{job_id}", response_model=JobDetail)
async def get_job(job_id: Id, person: Member, ctx: Ctx, mgr: Jobs, request: Request) -> Response:
    """One job: state, reason, queue position, exit code, attempts, hosts/ports/devices, ``access`` (how to reach it), run ids, ``ranks`` with logs, ``outputs_path`` (the outputs directory on the platform's filesystem). Answers carry an ``ETag``; ``If-None-Match`` with it gets 304."""
    key = ("job", person.admin, frozenset(person.groups), job_id)
    return bytes_response(request, *await ctx.db.reads.read(key, _detail_answer, ctx, mgr, person, job_id))


def _check_cancel(ctx: Context, caller: Identity, person: Person, request: Request, job_id: int) -> None:
    with ctx.db.writing() as s:
        job = records.visible(s, person, job_id)
        records.require_owner(person, job, "cancel")
        if job.state in states.TERMINAL:
            raise Refusal(409, f"job {job_id} is already {job.state}")
        audit.record(s, caller, request, "job.cancel", f"job {job_id}", owner=job.user)


@router.post("/{job_id}/cancel", status_code=202, response_model=JobDetail)
async def cancel(job_id: Id, caller: Caller, person: Member, ctx: Ctx, request: Request, mgr: Jobs) -> dict:
    """Owner or admin: cancel; a queued job is cancelled at once, a running one is signalled (SIGTERM, then SIGKILL) and becomes ``cancelled`` when its processes end."""
    await run_in_threadpool(_check_cancel, ctx, caller, person, request, job_id)
    await mgr.cancel(job_id)
    return await _detail_with_ranks(ctx, mgr, person, job_id)


@router.post("/{job_id}/retry", response_model=JobOut)
def retry(job_id: Id, caller: Caller, person: Member, ctx: Ctx, request: Request, mgr: Jobs) -> dict:
    """Owner or admin: queue a failed, cancelled or preempted job again (same id, one more attempt; inputs pinned to the same versions). A trial's job revives its trial (and a done experiment); 409 when its experiment is stopped or out of time."""
    with ctx.db.locked("~jobs") as s:
        job = records.visible(s, person, job_id)
        records.require_owner(person, job, "retry")
        if job.state not in states.RETRYABLE:
            raise Refusal(409, f"job {job_id} is {job.state}; only failed, cancelled or preempted jobs can be retried")
        trials.revive_trial(s, job_id)  # a trial's job: its trial runs again too
        audit.record(s, caller, request, "job.retry", f"job {job_id}", owner=job.user)
        job.state = states.check_move(job.state, states.QUEUED)
        job.reason, job.cancel_requested, job.exit_code, job.backend_ref = "retry requested", False, None, None
        job.admitted = job.started = job.finished = None
        records.pin_inputs(s, job.id, job.inputs)
        out = records.job_dict(job)
    mgr.wake_threadsafe()  # this runs in a worker thread: wake the queue on its event loop
    return out


def merge(base: dict, patch: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _spec_and_code(ctx: Context, person: Person, job_id: int) -> tuple[dict, dict]:
    with ctx.db.session() as s:
        job = records.visible(s, person, job_id)
        return dict(job.spec), dict(job.code)


@router.post("/{job_id}/clone", status_code=201, response_model=JobSubmitted)
async def clone(
    job_id: Id,
    caller: Caller,
    person: Member,
    ctx: Ctx,
    request: Request,
    patch: dict[str, Any] = Body(default_factory=dict, embed=True),
) -> Any:
    """Submit a copy of a job (the caller owns it) with ``patch`` merged into its spec (e.g. ``{"patch": {"env": {"LR": "0.1"}}}``). Accepts ``Idempotency-Key`` as ``POST /jobs`` does."""

    async def create(claim: Claim | None) -> dict:
        spec_doc, code = await run_in_threadpool(_spec_and_code, ctx, person, job_id)
        doc = merge(spec_doc, patch)
        code = doc.pop("code", code)
        try:
            spec = spec_from_dict(doc)
        except Exception as e:
            raise Refusal(422, str(e)) from None
        return await submit_spec(request, ctx, caller, spec, code, None, [], claim)

    return await once(request, ctx, caller.name, "POST /jobs/{id}/clone", create)


@router.post("/{job_id}/metrics", response_model=RunMetrics)
def post_metrics(job_id: Id, request: Request, ctx: Ctx, metrics: dict[str, Any] = Body(...)) -> dict:
    """The job itself (``Authorization: token $YITONG_JOB_TOKEN``): merge final metrics into the current run's ledger record. A run holds at most 1024 metric names (each 1-256 characters) and 1 MiB of them as JSON, over all of its job's calls: a call past that is refused (422) and changes nothing."""
    header = request.headers.get("authorization", "")
    token = header.split(None, 1)[1].strip() if " " in header else ""
    with ctx.db.locked("~jobs") as s:
        job = s.get(Job, job_id)
        digest = hashlib.sha256(token.encode()).hexdigest()
        if job is None or not token or not hmac.compare_digest(digest, job.token_hash or ""):
            raise Refusal(401, f"a valid token of job {job_id} is required")
        run = s.scalar(select(Run).where(Run.job_id == job_id, Run.attempt == job.attempts))
        if run is None:
            raise Refusal(409, f"job {job_id} has no running attempt")
        try:
            run.metrics = ledger.merged_metrics(job_id, run.metrics, metrics)
        except ValueError as e:
            raise Refusal(422, str(e)) from None
        if run.record.get("finished"):
            run.record = {**run.record, "metrics": run.metrics}
        return {"run": run.id, "metrics": run.metrics}
