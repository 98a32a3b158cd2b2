"""Runs: the ledger record of one attempt, and rerunning it."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..core.errors import Refusal
from ..core.idempotency import Claim, once
from ..jobs import records
from ..jobs.ledger import pinned_inputs
from ..jobs.models import Run
from ..jobs.spec import spec_from_dict
from .common import Caller, Ctx, Id, as_person, in_thread
from .jobs import submit_spec

router = APIRouter(prefix="/runs", tags=["jobs"])


def _visible_run(ctx, caller, run_id: int) -> dict:
    with ctx.db.session() as s:
        run = s.get(Run, run_id)
        if run is None:
            raise Refusal(404, f"there is no run {run_id}")
        try:
            records.visible(s, as_person(caller), run.job_id)
        except Refusal:
            raise Refusal(404, f"there is no run {run_id}") from None
        return {**run.record, "metrics": {**run.record.get("metrics", {}), **run.metrics}}


@router.get("/{run_id}")
async def get_run(run_id: Id, caller: Caller, ctx: Ctx) -> dict:
    """The ledger record: dataset versions and manifest hashes, code (commit, dirty hash), environment (python, pip freeze hash, image digest), devices/driver, parameters, exit code, metrics, artifacts."""
    return await in_thread(_visible_run, ctx, caller, run_id)


@router.post("/{run_id}/rerun", status_code=201)
async def rerun(run_id: Id, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Submit the record again as a new job of the caller: same spec, same code, inputs pinned to the exact dataset versions. Accepts ``Idempotency-Key`` as ``POST /jobs`` does."""

    async def create(claim: Claim | None) -> dict:
        record = await in_thread(_visible_run, ctx, caller, run_id)
        doc = dict(record["spec"])
        doc["inputs"] = pinned_inputs(record)
        try:
            spec = spec_from_dict(doc)
        except Exception as e:
            raise Refusal(422, str(e)) from None
        return await submit_spec(request, ctx, caller, spec, record.get("code") or {}, None, [], claim)

    return await once(request, ctx, caller.name, "POST /runs/{id}/rerun", create)
