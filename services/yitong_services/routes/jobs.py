"""Jobs: submit (JSON, YAML or an imported document), list, detail, cancel, retry, clone, metrics."""

from __future__ import annotations

import copy
import hashlib
import hmac
from typing import Any

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import StreamingResponse
from sqlalchemy import select

from ..core import audit
from ..core.auth import person_for
from ..core.errors import Refusal
from ..core.idempotency import Claim, once
from ..core.limits import MAX_ID
from ..core.paging import Paging, json_response, paged_response
from ..jobs import records, states
from ..jobs.events import stream
from ..jobs.listing import page_of_jobs, watchable
from ..jobs.manager import JobManager
from ..jobs.models import Job, Run
from ..jobs.queue import positions
from ..jobs.spec import spec_from_dict
from .common import Caller, Ctx, Id, as_person, in_thread

router = APIRouter(prefix="/jobs", tags=["jobs"])
SUBMIT_BODY = {
    "requestBody": {
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "application/yaml": {"schema": {"type": "string"}},
        }
    }
}


def manager(request: Request) -> JobManager:
    return request.app.state.jobs


async def submit_spec(
    request: Request,
    ctx: Ctx,
    caller: Caller,
    spec,
    code: dict,
    user: str | None,
    notes: list[str],
    claim: Claim | None = None,
) -> dict:
    if user is not None and not isinstance(user, str):
        raise Refusal(422, "user: must be a user name (a string); only admins and the platform may name one")
    person = await person_for(ctx, caller, user)
    mgr = manager(request)

    def work() -> dict:
        with ctx.db.locked("~jobs") as s:
            if claim is not None:  # a retry of a stored submit replays its answer (idempotency.py)
                claim.check(s)
            job = records.create(s, person, spec, code, ctx.inventory, mgr.backend.name)
            audit.record(s, caller, request, "job.submit", f"job {job.id}", owner=person.name, detail={"vc": job.vc})
            out = records.job_dict(job) | {"notes": notes}
            return claim.store(s, 201, out) if claim is not None else out

    out = await in_thread(work)
    mgr.wake()
    return out


@router.post("", status_code=201, openapi_extra=SUBMIT_BODY)
async def submit(
    request: Request,
    caller: Caller,
    ctx: Ctx,
    source: str | None = Query(None, alias="from", description="openpai | pytorchjob"),
    vc: str | None = Query(None, description="the VC (overrides the document's)"),
) -> dict:
    """Submit a job: a spec as JSON or YAML (plus optional ``code: {commit, dirty_hash, path}`` and, for the service, ``user``), or with ``?from=openpai|pytorchjob`` another system's document; ``notes`` lists unmapped fields. 422 names bad fields; 403 not a member; 404 unknown VC or dataset; nothing is queued on refusal. With an ``Idempotency-Key`` header, a retry of the same request gets the first answer again (``Idempotent-Replayed: true``) and queues nothing; the same key with another request is a 422."""

    async def create(claim: Claim | None) -> dict:
        spec, code, user, notes = records.parse_submission(
            await request.body(), request.headers.get("content-type", ""), source, vc
        )
        return await submit_spec(request, ctx, caller, spec, code, user, notes, claim)

    return await once(request, ctx, caller.name, "POST /jobs", create)


@router.get("", response_model=list[dict])
async def list_jobs(
    caller: Caller,
    ctx: Ctx,
    request: Request,
    page: Paging,
    vc: str | None = Query(None, max_length=64),
    state: str | None = Query(None, max_length=16),
    user: str | None = Query(None, max_length=255),
) -> Response:
    """Jobs of the caller's VCs (admins: all), newest first; filter with ``?vc=``, ``?state=``, ``?user=``; page with ``?offset=&limit=`` (``Accept: application/jupyterhub-pagination+json`` for the hub's envelope with the total). Queued jobs carry ``position`` and ``reason``. Answers carry an ``ETag``; ``If-None-Match`` with it gets 304."""
    items, total = await in_thread(page_of_jobs, ctx.db, as_person(caller), page, vc, state, user)
    return paged_response(request, items, total, page)


@router.get("/events", response_class=StreamingResponse, responses={200: {"content": {"text/event-stream": {}}}})
async def job_events(
    caller: Caller,
    ctx: Ctx,
    request: Request,
    job: int | None = Query(None, ge=1, le=MAX_ID, description="only this job's changes"),
    seconds: float = Query(300.0, ge=0, le=3600, description="end the stream after this long (clients reconnect)"),
) -> StreamingResponse:
    """Server-sent events: ``ready`` once watching, then a ``job`` event (``{id, vc, user, state, reason, attempts, position}``) each time a job of the caller's VCs (admins: all) changes state, reason, attempts or queue position; ``resync`` when events were dropped (GET ``/jobs`` again). Push instead of polling ``GET /jobs``."""
    vcs = await in_thread(watchable, ctx.db, as_person(caller), job)
    return StreamingResponse(
        stream(request.app.state.job_feed, vcs, job, seconds),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/{job_id}", response_model=dict)
async def get_job_status(job_id: Id, caller: Caller, ctx: Ctx, request: Request) -> Response:
    """One job: state, reason, queue position, exit code, attempts, hosts/ports/devices, ``access`` (how to reach it), run ids, ``ranks`` with logs, ``outputs_path`` (the outputs directory on the platform's filesystem). Answers carry an ``ETag``; ``If-None-Match`` with it gets 304."""
    return json_response(request, await get_job(job_id, caller, ctx, request))


async def get_job(job_id: Id, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """The job as ``GET /jobs/{id}`` answers it (also the answer of cancel)."""
    mgr = manager(request)

    def work() -> dict:
        with ctx.db.session() as s:
            job = records.visible(s, as_person(caller), job_id)
            out = records.job_dict(job, None, records.run_ids(s, job.id))
        if job.state == states.QUEUED:  # outside the session: it holds a pooled connection
            out["position"] = positions(ctx.db, [job.id]).get(job.id)
        out["access"] = mgr.backend.describe(out["backend_ref"]).get("access") if out["backend_ref"] else None
        out["outputs_path"] = str(mgr.workdir(job_id) / out["spec"].get("outputs", "outputs"))
        return out

    out = await in_thread(work)
    out["ranks"] = await mgr.backend.ranks(out["backend_ref"]) if out["backend_ref"] else []
    return out


@router.post("/{job_id}/cancel", status_code=202)
async def cancel(job_id: Id, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Owner or admin: cancel; a queued job is cancelled at once, a running one is signalled (SIGTERM, then SIGKILL) and becomes ``cancelled`` when its processes end."""

    def check() -> None:
        with ctx.db.writing() as s:
            job = records.visible(s, as_person(caller), job_id)
            records.require_owner(as_person(caller), job, "cancel")
            if job.state in states.TERMINAL:
                raise Refusal(409, f"job {job_id} is already {job.state}")
            audit.record(s, caller, request, "job.cancel", f"job {job_id}", owner=job.user)

    await in_thread(check)
    await manager(request).cancel(job_id)
    return await get_job(job_id, caller, ctx, request)


@router.post("/{job_id}/retry")
async def retry(job_id: Id, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Owner or admin: queue a failed, cancelled or preempted job again (same id, one more attempt; inputs pinned to the same versions)."""

    def work() -> dict:
        with ctx.db.locked("~jobs") as s:
            job = records.visible(s, as_person(caller), job_id)
            records.require_owner(as_person(caller), job, "retry")
            if job.state not in states.RETRYABLE:
                raise Refusal(
                    409, f"job {job_id} is {job.state}; only failed, cancelled or preempted jobs can be retried"
                )
            audit.record(s, caller, request, "job.retry", f"job {job_id}", owner=job.user)
            job.state = states.check_move(job.state, states.QUEUED)
            job.reason, job.cancel_requested, job.exit_code, job.backend_ref = "retry requested", False, None, None
            job.admitted = job.started = job.finished = None
            records.pin_inputs(s, job)
            return records.job_dict(job)

    out = await in_thread(work)
    manager(request).wake()
    return out


def merge(base: dict, patch: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@router.post("/{job_id}/clone", status_code=201)
async def clone(
    job_id: Id,
    caller: Caller,
    ctx: Ctx,
    request: Request,
    patch: dict[str, Any] = Body(default_factory=dict, embed=True),
) -> dict:
    """Submit a copy of a job (the caller owns it) with ``patch`` merged into its spec (e.g. ``{"patch": {"env": {"LR": "0.1"}}}``). Accepts ``Idempotency-Key`` as ``POST /jobs`` does."""

    def load() -> tuple[dict, dict]:
        with ctx.db.session() as s:
            job = records.visible(s, as_person(caller), job_id)
            return dict(job.spec), dict(job.code)

    async def create(claim: Claim | None) -> dict:
        spec_doc, code = await in_thread(load)
        doc = merge(spec_doc, patch)
        code = doc.pop("code", code)
        try:
            spec = spec_from_dict(doc)
        except Exception as e:
            raise Refusal(422, str(e)) from None
        return await submit_spec(request, ctx, caller, spec, code, None, [], claim)

    return await once(request, ctx, caller.name, "POST /jobs/{id}/clone", create)


@router.post("/{job_id}/metrics")
async def post_metrics(job_id: Id, request: Request, ctx: Ctx, metrics: dict[str, Any] = Body(...)) -> dict:
    """The job itself (``Authorization: token $YITONG_JOB_TOKEN``): merge final metrics into the current run's ledger record."""
    header = request.headers.get("authorization", "")
    token = header.split(None, 1)[1].strip() if " " in header else ""

    def work() -> dict:
        with ctx.db.locked("~jobs") as s:
            job = s.get(Job, job_id)
            digest = hashlib.sha256(token.encode()).hexdigest()
            if job is None or not token or not hmac.compare_digest(digest, job.token_hash or ""):
                raise Refusal(401, f"a valid token of job {job_id} is required")
            run = s.scalar(select(Run).where(Run.job_id == job_id, Run.attempt == job.attempts))
            if run is None:
                raise Refusal(409, f"job {job_id} has no running attempt")
            run.metrics = {**run.metrics, **metrics}
            if run.record.get("finished"):
                run.record = {**run.record, "metrics": run.metrics}
            return {"run": run.id, "metrics": run.metrics}

    return await in_thread(work)
