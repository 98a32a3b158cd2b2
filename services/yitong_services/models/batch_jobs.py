"""Batch inference jobs: check and submit one, show it, and commit its predictions (blocking:
call from a worker thread). The pure parts are in batch.py.

Submit checks everything a person can get wrong before anything is queued: the model version
(and its framework), the input version and its CSV headers against ``columns``/``keep`` and the
version's signature, and the output dataset (of the model's VC; created when missing, never a
model's own files). The job is an ordinary job of the caller (jobs/records.py ``create``: VC
membership, quotas, the ledger), plus a ``batch_jobs`` row that says what it runs.

The commit comes from the job's running attempt with the job's own hub token (its owner's,
never the service's): its objects went up like any upload of the owner's, and the version is
committed with the platform's lineage (the job, the model version, the input version) in the
same transaction. A second commit of the same job answers the version already made.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.authz import Person
from ..core.errors import Refusal
from ..datasets import records as datasets
from ..datasets.commit import commit
from ..datasets.models import Dataset, DatasetVersion
from ..datasets.objindex import locate
from ..datasets.schemas import CommitIn
from ..datasets.storage import Storage
from ..datasets.views import one_version as dataset_version
from ..jobs import records as jobs
from ..jobs import states
from ..jobs.models import Job, Run
from ..jobs.spec import spec_from_dict
from ..vcs.quantities import Resources
from . import batch, mlserver, parquet_footer, records, runtimes
from .models import BatchJob, Model, ModelVersion
from .schemas import BatchIn

MAX_FILES = 1000


def _output(session: Session, person: Person, vc: str, out: str) -> Dataset | None:
    """The output dataset when it exists (checked: of the model's VC, changeable, no model's)."""
    ovc, oname = out.split("/", 1)
    if ovc != vc:
        raise Refusal(422, f"output {out}: the predictions become a dataset of the model's VC {vc}")
    d = session.scalar(select(Dataset).where(Dataset.vc == ovc, Dataset.name == oname))
    if d is None:
        if oname.startswith(records.PREFIX):
            raise Refusal(422, f"output {out}: names starting with {records.PREFIX} hold models' files")
        return None
    d = datasets.visible(session, person, ovc, oname)
    datasets.require_member(session, person, d)
    if session.scalar(select(Model.id).where(Model.dataset_id == d.id)) is not None:
        raise Refusal(422, f"output {out} holds a model's files; choose another dataset")
    return d


def _header(storage: Storage, loc: Any, path: str) -> list[str] | None:
    """The columns of one input file from the store: a CSV file's header line, a Parquet file's
    schema from its footer (None: neither can be read)."""
    if not path.endswith(batch.PARQUET_SUFFIX):
        return batch.parse_header(b"".join(storage.chunks(loc, 0, min(batch.HEADER_BYTES, loc.size))))
    if loc.size < 2 * parquet_footer.TAIL:
        return None
    n = parquet_footer.footer_length(b"".join(storage.chunks(loc, loc.size - parquet_footer.TAIL, loc.size)))
    if n is None or n > parquet_footer.MAX_FOOTER or n > loc.size - 2 * parquet_footer.TAIL:
        return None
    end = loc.size - parquet_footer.TAIL
    try:
        return batch.parquet_header(parquet_footer.columns(b"".join(storage.chunks(loc, end - n, end))))
    except parquet_footer.Malformed:
        return None


def _headers(storage: Storage, session: Session, files: list[dict[str, Any]]) -> list[tuple[str, list[str] | None]]:
    found = locate(session, [f["hash"] for f in files])
    out = []
    for f in files:
        loc = found.get(f["hash"])
        out.append((f["path"], _header(storage, loc, f["path"]) if loc else batch.parse_header(b"")))
    return out


def check(storage: Storage, person: Person, vc: str, name: str, ref: str, body: BatchIn) -> dict[str, Any]:
    """Everything the submit needs, checked (no lock held): 404/422 with a sentence otherwise."""
    with storage.db.session() as s:
        m = records.visible(s, person, vc, name)
        v = records.resolve(s, m, ref)
        framework, model_file = _model(storage, s, f"{records.full_name(m)} v{v.number}", v)
        ivc, iname, iref = _parts(body.input)
        d_in = datasets.visible(s, person, ivc, iname)
        dv_in = datasets.resolve(s, d_in, iref)
        _output(s, person, vc, body.output)
        files = batch.input_files(storage.manifest(dv_in.manifest)["files"], body.path)
        source = {"dataset": f"{ivc}/{iname}", "version": dv_in.number, "manifest": dv_in.manifest, "path": body.path}
        where = f"{ivc}/{iname}@{dv_in.number}" + (f" under {body.path}" if body.path else "")
        if not files:
            raise Refusal(422, f"input {where} has no .csv or .parquet file")
        if len(files) > MAX_FILES:
            raise Refusal(422, f"input {where} has {len(files)} input files; at most {MAX_FILES} (choose a path)")
        width = batch.signature_width(v.signature)
        chosen: list[str] | None = None
        for path, header in _headers(storage, s, files):
            if header is None:
                what = (
                    "is no Parquet file (no footer with a schema)"
                    if path.endswith(".parquet")
                    else "has no header line"
                )
                raise Refusal(422, f"{path} in {where} {what}")
            cols, refused = batch.columns_refusal(path, header, body.columns, body.keep, width)
            if refused:
                raise Refusal(422, refused)
            if chosen is not None and cols != chosen:
                raise Refusal(422, f"{path} in {where} has other columns than {files[0]['path']}")
            chosen = cols
        model_ref = f"{records.full_name(m)}@{v.number}"
        return {
            "model_id": m.id,
            "version_id": v.id,
            "model": model_ref,
            "model_dataset": f"{vc}/{records.dataset_of(s, m).name}@{v.number}",
            "source": source,
            "columns": chosen or [],
            "framework": framework,
            "model_file": model_file,
        }


#: the runtimes a batch job predicts with (custom Python's class is MLServer's to call)
BATCH_FRAMEWORKS = ("sklearn", "xgboost", "lightgbm", "onnx")


def _model(storage: Storage, session: Session, what: str, v: Any) -> tuple[str, str]:
    """(framework, the model file relative to the version's files), or a 422 with a sentence."""
    runtime = runtimes.choose(v.framework, v.format)
    if runtime is None or runtime.frameworks[0] not in BATCH_FRAMEWORKS:
        kind = f"{v.framework or 'of no framework'}" + (f" (format {v.format})" if v.format else "")
        raise Refusal(422, f"{what} is {kind}; batch inference runs {', '.join(BATCH_FRAMEWORKS)} versions")
    dv = session.get(DatasetVersion, v.dataset_version_id)
    assert dv is not None
    uri = runtimes.model_file(runtime, [f["path"] for f in storage.manifest(dv.manifest)["files"]])
    if uri is None:
        kinds = ", ".join(runtime.suffixes)
        raise Refusal(
            422, f"{what} has no single {runtime.name} model file ({kinds}); name it model{runtime.suffixes[0]}"
        )
    return runtime.frameworks[0], uri


def _parts(ref: str) -> tuple[str, str, str]:
    name, _, version = ref.partition("@")
    vc, _, dataset = name.partition("/")
    return vc, dataset, version or "latest"


def create(
    session: Session,
    person: Person,
    vc: str,
    name: str,
    body: BatchIn,
    facts: dict[str, Any],
    inventory: Resources,
    backend: str,
) -> Job:
    """The job and its batch row, in the caller's transaction (``~jobs`` lock held)."""
    d_out = _output(session, person, vc, body.output)
    if d_out is None:
        ovc, oname = body.output.split("/", 1)
        d_out = datasets.create(session, person, ovc, oname, f"predictions of {facts['model']}", "vc")
    the_plan = batch.plan(
        mlserver.framework_python(), facts["columns"], list(body.keep), body.chunk_rows, body.path, body.cpu
    ) | {"framework": facts["framework"], "model_file": facts["model_file"]}
    spec = spec_from_dict(
        batch.batch_spec(
            name=body.name or batch.job_name(name),
            vc=vc,
            model_dataset=facts["model_dataset"],
            input_dataset=f"{facts['source']['dataset']}@{facts['source']['version']}",
            the_plan=the_plan,
            cpu=body.cpu,
            memory=body.memory,
            retries=body.retries,
        )
    )
    job = jobs.create(session, person, spec, {}, inventory, backend)
    session.add(
        BatchJob(
            job_id=job.id,
            model_id=facts["model_id"],
            version_id=facts["version_id"],
            input=facts["source"],
            output_dataset_id=d_out.id,
            plan={k: the_plan[k] for k in ("columns", "keep", "chunk_rows")},
        )
    )
    session.flush()
    return job


def _row(session: Session, person: Person, job_id: int) -> tuple[Job, BatchJob]:
    job = jobs.visible(session, person, job_id)
    row = session.get(BatchJob, job_id)
    if row is None:
        raise Refusal(404, f"job {job_id} is not a batch inference job")
    return job, row


def _model_ref(session: Session, row: BatchJob) -> tuple[str, str]:
    m = session.get(Model, row.model_id)
    v = session.get(ModelVersion, row.version_id)
    assert m is not None and v is not None  # cascades delete the row with them
    dv = session.get(DatasetVersion, v.dataset_version_id)
    return f"{records.full_name(m)}@{v.number}", dv.manifest if dv else ""


def status(session: Session, person: Person, job_id: int) -> dict[str, Any]:
    job, row = _row(session, person, job_id)
    d_out = session.get(Dataset, row.output_dataset_id)
    run = session.scalar(select(Run).where(Run.job_id == job.id).order_by(Run.attempt.desc()).limit(1))
    return {
        "job": job.id,
        "state": job.state,
        "reason": job.reason,
        "attempts": job.attempts,
        "model": _model_ref(session, row)[0],
        "input": f"{row.input['dataset']}@{row.input['version']}",
        "output": datasets.full_name(d_out) if d_out else "",
        "columns": row.plan.get("columns", []),
        "keep": row.plan.get("keep", []),
        "chunk_rows": row.plan.get("chunk_rows", 0),
        "progress": batch.progress(run.metrics if run else {}),
        "version": row.output_version,
    }


def commit_predictions(
    storage: Storage, person: Person, job_id: int, files: list[dict[str, Any]], job_token: str
) -> dict[str, Any]:
    """The output version with the job's predictions (its lineage the platform's); ``job_token``
    proves the call comes from the job (its attempt's ``YITONG_JOB_TOKEN``)."""
    with storage.db.session() as s:
        job, row = _row(s, person, job_id)
        digest = hashlib.sha256(job_token.encode()).hexdigest()
        if person.name != job.user or not job_token or not hmac.compare_digest(digest, job.token_hash or ""):
            raise Refusal(403, f"only job {job_id} itself commits its predictions (with its own tokens)")
        d_out = s.get(Dataset, row.output_dataset_id)
        assert d_out is not None  # the row goes with the dataset
        if row.output_version is not None:
            return dataset_version(s, d_out, datasets.resolve(s, d_out, str(row.output_version))) | {"unchanged": True}
        if job.state != states.RUNNING:
            raise Refusal(409, f"job {job_id} is {job.state}; its running attempt commits its predictions")
        model, model_manifest = _model_ref(s, row)
        last = datasets.latest(s, d_out)
        ovc, oname = d_out.vc, d_out.name
        lineage = batch.lineage(job.id, model, model_manifest, row.input)
        message = f"predictions of {model} over {row.input['dataset']}@{row.input['version']} (batch job {job.id})"

    def record(session: Session, version: dict) -> None:  # in the transaction that inserts the version
        dv = datasets.resolve(session, session.get(Dataset, row.output_dataset_id), str(version["number"]))
        dv.lineage = lineage
        session.get(BatchJob, job_id).output_version = dv.number  # type: ignore[union-attr]

    change = CommitIn(files=files, parent=last.number if last else None, message=message)  # type: ignore[arg-type]
    out, created = commit(storage, person, ovc, oname, change, record)
    with storage.db.writing() as s:
        if not created:  # the same files as the latest version: that version is the output
            r = s.get(BatchJob, job_id)
            if r is not None and r.output_version is None:
                r.output_version = out["number"]
        d_out = datasets.visible(s, person, ovc, oname)
        return dataset_version(s, d_out, datasets.resolve(s, d_out, str(out["number"]))) | {"unchanged": not created}
