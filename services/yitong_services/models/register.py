"""Registering a model version: its files become a version of the model's backing dataset
(datasets/commit.py: checked, all or nothing) and, in the same transaction, the registry row
with its metadata and lineage. Blocking: call from a worker thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.authz import Person
from ..core.disk_usage import measure
from ..core.errors import Refusal
from ..datasets import records as datasets
from ..datasets.commit import commit
from ..datasets.manifest import path_refusal
from ..datasets.quota import precheck
from ..datasets.schemas import CommitIn
from ..datasets.storage import Storage
from ..jobs import records as jobs
from ..jobs.models import Job, Run
from ..jobs.states import SUCCEEDED
from . import records
from .lineage import from_record, metrics_of
from .models import ModelVersion
from .outputs import ingest
from .schemas import ModelVersionIn
from .views import one_version


def _job_source(
    storage: Storage, person: Person, vc: str, name: str, body: ModelVersionIn, jobs_dir: Path
) -> tuple[list[dict], dict, dict]:
    """(files, lineage, metrics) of a finished job of the model's VC."""
    assert body.job is not None
    with storage.db.session() as s:
        records.visible(s, person, vc, name)
        job: Job = jobs.visible(s, person, body.job)
        if job.vc != vc:
            raise Refusal(422, f"job {job.id} ran in VC {job.vc}; model {vc}/{name} registers only jobs of VC {vc}")
        if job.state != SUCCEEDED:
            raise Refusal(409, f"job {job.id} is {job.state}; register a model from a succeeded job")
        run = s.scalar(select(Run).where(Run.job_id == job.id).order_by(Run.attempt.desc()).limit(1))
        record: dict[str, Any] = {**(run.record if run else {}), "metrics": {**(run.metrics if run else {})}}
        outputs = jobs_dir / str(job.id) / str(job.spec.get("outputs", "outputs"))
    # the VC's storage quota before a byte is copied (the commit charges the exact new objects)
    size = _outputs_bytes(outputs, body.path)
    with storage.db.session() as s:
        precheck(s, vc, None, size, f"registering the outputs of job {body.job}")
    files = ingest(storage.spool.person(person.name), outputs, body.path, job.id, storage.limit)
    return files, from_record(job.id, record, body.path.strip("/")), metrics_of(record)


def _outputs_bytes(outputs: Path, path: str) -> int:
    """Bytes under ``outputs/path``; 0 where the path is refused or goes through a link (the
    ingest refuses those with its own sentence; the hostile job's links are never followed)."""
    path = path.strip("/")
    if path and path_refusal(path):
        return 0
    cursor = outputs
    for part in ["", *path.split("/")] if path else [""]:
        cursor = cursor / part if part else cursor
        if cursor.is_symlink():
            return 0
    return measure(cursor).bytes


def register(storage: Storage, person: Person, vc: str, name: str, body: ModelVersionIn, jobs_dir: Path) -> dict:
    """The new version's dict; 409 when the same files are a version already."""
    lineage: dict[str, Any] = dict(body.lineage)
    metrics: dict[str, float] = {}
    if body.job is not None:
        files, from_job, metrics = _job_source(storage, person, vc, name, body, jobs_dir)
        lineage |= from_job
    else:
        assert body.files is not None
        files = list(body.files)
    metrics |= body.metrics
    with storage.db.session() as s:
        m = records.visible(s, person, vc, name)
        d = records.dataset_of(s, m)
        last = datasets.latest(s, d)
        dataset_name = d.name

    def record(session: Session, version: dict) -> None:  # in the transaction that inserts the version
        m = records.visible(session, person, vc, name)
        d = records.dataset_of(session, m)
        dv = datasets.resolve(session, d, str(version["number"]))
        records.add_version(
            session,
            m,
            ModelVersion(
                model_id=m.id,
                number=dv.number,
                dataset_version_id=dv.id,
                author=person.name,
                framework=body.framework,
                format=body.format,
                signature=body.signature.model_dump(),
                metrics=metrics,
                tags=dict(body.tags),
                lineage=lineage,
            ),
        )

    change = CommitIn(files=files, parent=last.number if last else None, message=body.message)  # type: ignore[arg-type]
    out, created = commit(storage, person, vc, dataset_name, change, record)
    with storage.db.session() as s:
        m = records.visible(s, person, vc, name)
        if not created:
            raise Refusal(409, f"model {vc}/{name}: these files are version {out['number']} already")
        return one_version(s, m, records.resolve(s, m, str(out["number"])))
