"""Runs: the ledger record of one attempt, and rerunning it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from ..core.errors import Refusal
from ..core.idempotency import Claim, once
from ..jobs import records
from ..jobs.ledger import pinned_inputs
from ..jobs.models import Run
from ..jobs.schemas import JobSubmitted, RunOut
from ..jobs.spec import spec_from_dict
from .common import Caller, Ctx, Id, Member
from .jobs import submit_spec

router = APIRouter(prefix="/runs", tags=["jobs"])


def visible_run(run_id: Id, person: Member, ctx: Ctx) -> dict:
    """The ledger record of a run of a job the caller sees (404 for any other run)."""
    with ctx.db.session() as s:
        run = s.get(Run, run_id)
        if run is None:
            raise Refusal(404, f"there is no run {run_id}")
        try:
            records.visible(s, person, run.job_id)
        except Refusal:
            raise Refusal(404, f"there is no run {run_id}") from None
        return {**run.record, "metrics": {**run.record.get("metrics", {}), **run.metrics}}


VisibleRun = Annotated[dict, Depends(visible_run)]


@router.get("/{run_id}", response_model=RunOut)
def get_run(record: VisibleRun) -> dict:
    """The ledger record: dataset versions and manifest hashes, code (commit, dirty hash), environment (python, pip freeze hash, image digest), devices/driver, parameters, exit code, metrics, artifacts."""
    return record


@router.post("/{run_id}/rerun", status_code=201, response_model=JobSubmitted)
async def rerun(record: VisibleRun, caller: Caller, ctx: Ctx, request: Request) -> Any:
    """Submit the record again as a new job of the caller: same spec, same code, inputs pinned to the exact dataset versions. Accepts ``Idempotency-Key`` as ``POST /jobs`` does."""

    async def create(claim: Claim | None) -> dict:
        doc = dict(record["spec"])
        doc["inputs"] = pinned_inputs(record)
        try:
            spec = spec_from_dict(doc)
        except Exception as e:
            raise Refusal(422, str(e)) from None
        return await submit_spec(request, ctx, caller, spec, record.get("code") or {}, None, [], claim)

    return await once(request, ctx, caller.name, "POST /runs/{id}/rerun", create)
