"""Batch inference: run a model version over a dataset version as a job, show it, and (the job
itself) commit its predictions as a new dataset version with lineage (docs/models.md)."""

from fastapi import APIRouter, Request

from ..core import audit
from ..datasets.schemas import Committed
from ..models import batch_jobs
from ..models.schemas import BatchCommitIn, BatchIn, BatchOut
from .common import Caller, Ctx, Id, as_person

router = APIRouter(tags=["models"])


@router.post("/models/{vc}/{name}/versions/{ref}/batch", response_model=BatchOut, status_code=201)
def submit_batch(vc: str, name: str, ref: str, body: BatchIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """Members of the VC: queue a batch inference job (a job of the caller in the model's VC, under
    its quota) that predicts over the input version's CSV files, chunk by chunk, and commits the
    predictions as the next version of ``output``. 404 for a model, version or dataset the caller
    cannot see; 422 naming a column, framework or output that does not fit; nothing is queued then."""
    person = as_person(caller)
    facts = batch_jobs.check(ctx.storage, person, vc, name, ref, body)
    mgr = request.app.state.jobs
    with ctx.db.locked("~jobs") as s:
        job = batch_jobs.create(s, person, vc, name, body, facts, ctx.inventory, mgr.backend.name)
        audit.record(s, caller, request, "job.submit", f"job {job.id}", owner=person.name, detail={"vc": job.vc})
        s.flush()
        out = batch_jobs.status(s, person, job.id)
    mgr.wake_threadsafe()
    return out


@router.get("/batch/{job_id}", response_model=BatchOut)
def get_batch(job_id: Id, caller: Caller, ctx: Ctx) -> dict:
    """A batch inference job: state, progress (rows and chunks done), the output version once committed."""
    with ctx.db.session() as s:
        return batch_jobs.status(s, as_person(caller), job_id)


@router.post("/batch/{job_id}/commit", response_model=Committed, status_code=201)
def commit_batch(job_id: Id, body: BatchCommitIn, caller: Caller, ctx: Ctx, request: Request) -> dict:
    """The running batch job itself (its owner's hub token, plus its ``YITONG_JOB_TOKEN`` in
    ``X-Yitong-Job-Token``): commit its predictions (uploaded objects) as the next version of the
    output dataset, its lineage recorded by the platform. Again: that version."""
    proof = request.headers.get("x-yitong-job-token", "")
    return batch_jobs.commit_predictions(ctx.storage, as_person(caller), job_id, list(body.files), proof)
