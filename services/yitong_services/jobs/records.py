"""Jobs in the database: parse a submission, check it, insert it; views; who may see and change a job.

A job the caller may not see (not a member of its VC) answers 404 like an unknown one.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.authz import Person, is_member
from ..core.errors import Refusal, describe_validation
from ..core.limits import MAX_DEPTH, MAX_SHORT, DocumentError, load_json, load_yaml
from ..core.models import utcnow
from ..datasets import records as datasets
from ..datasets.models import DatasetRef, DatasetVersion
from ..vcs import catalog
from ..vcs.quantities import Resources, human_amount
from . import states
from .devices import check_backend_devices
from .importers import ImportRefused, import_file
from .models import Job, Run
from .spec import JobSpec, per_job_resources, request_of, spec_from_dict
from .spec_errors import JobSpecError

YAML_TYPES = ("yaml", "x-yaml")


class Code(BaseModel):
    """What the client knows of the submitted directory (``code`` in the submit body)."""

    model_config = ConfigDict(extra="forbid")
    commit: str | None = Field(None, max_length=64, pattern=r"^[0-9a-fA-F]{4,64}$")
    dirty_hash: str | None = Field(None, max_length=128, pattern=r"^[0-9A-Za-z:_-]{1,128}$")
    path: str | None = Field(None, max_length=4096)


class Submission(JobSpec):
    """The submit body in JSON (the OpenAPI document's schema): the spec, plus ``code``, plus for
    the platform's own token the ``user`` it submits for."""

    code: Code | None = None
    user: str | None = Field(
        None, min_length=1, max_length=MAX_SHORT, description="the platform's own token only: whose job this is"
    )


def _doc(body: bytes, content_type: str, max_depth: int = MAX_DEPTH) -> Any:
    """The body as a document: JSON when the content type says so, else YAML (aliases refused,
    lists and maps at most ``max_depth`` deep)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refusal(422, f"spec: the body is not UTF-8 text (byte {e.start})") from None
    try:
        if any(t in content_type for t in YAML_TYPES) or "json" not in content_type:
            return load_yaml(text, max_depth)
        return load_json(text, max_depth, "spec")
    except DocumentError as e:
        raise Refusal(422, str(e)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None)
        raise Refusal(422, f"spec: not valid YAML{where}" + (f": {problem}" if problem else "")) from None
    except ValueError as e:
        raise Refusal(422, f"spec: not valid JSON: {e}") from None


def parse_submission(
    body: bytes, content_type: str, source: str | None, vc: str | None, max_depth: int = MAX_DEPTH
) -> tuple[JobSpec, dict, str | None, list[str]]:
    """``(spec, code, user, notes)`` from a JSON or YAML body, or an OpenPAI/PyTorchJob document."""
    try:
        if source:
            spec, notes = import_file(source, body.decode("utf-8", errors="replace"), vc=vc)
            return spec, {}, None, notes
        doc = _doc(body, content_type, max_depth)
        if not isinstance(doc, dict):
            raise JobSpecError([f"spec: must be a map of fields, got {type(doc).__name__}"])
        code, user = doc.pop("code", None) or {}, doc.pop("user", None)
        if user is not None and not (isinstance(user, str) and 0 < len(user) <= MAX_SHORT):
            raise JobSpecError([f"user: must be a user name (a string of 1 to {MAX_SHORT} characters)"])
        if vc is not None:
            doc["vc"] = vc
        spec = spec_from_dict(doc)
        return spec, Code.model_validate(code).model_dump(), user, []
    except (JobSpecError, ImportRefused) as e:
        raise Refusal(422, str(e)) from None
    except ValidationError as e:
        raise Refusal(422, "code: " + describe_validation(list(e.errors()))) from None


def never_fits(request: Resources, vc: str, quota: Resources, caps: Resources, user: str) -> str | None:
    """Why a request can never be admitted in ``vc`` however long it waits (None: it can)."""
    for name, amount in request.items():
        if amount <= 0:
            continue
        limit = quota.get(name, 0)
        if limit <= 0:
            return f"VC {vc} has no {name} in its quota"
        if amount > limit + 1e-9:
            return f"the job asks for {human_amount(name, amount)} {name}; VC {vc}'s quota is {human_amount(name, limit)} {name}"
        if name in caps and amount > caps[name] + 1e-9:
            return f"the job asks for {human_amount(name, amount)} {name}; the user cap in VC {vc} is {human_amount(name, caps[name])} {name}"
    return None


def unfit(person: Person, spec: JobSpec, inventory: Resources, backend: str, vc: catalog.VCFacts) -> str | None:
    """Why this cluster or VC could never run the job (its devices, node count, quota, user cap), or None.
    A submit is refused with it; a dry run shows the spec with it (``refused``)."""
    refused = check_backend_devices(spec, inventory)
    if refused is None and backend == "local" and spec.nodes != 1:
        refused = f"the local backend runs single-node jobs; this job asks for {spec.nodes} nodes"
    return refused or never_fits(per_job_resources(spec), vc.name, vc.quota, vc.user_caps, person.name)


def check(
    session: Session | None,
    person: Person,
    spec: JobSpec,
    inventory: Resources,
    backend: str,
    vc: catalog.VCFacts | None = None,
    fit: bool = True,
) -> tuple[Any, list]:
    """Every refusal a submit can meet, nothing written: ``(VC row, resolved inputs)``. A dry run
    (``POST /jobs/preview``) stops here; a submit goes on to queue the job. ``vc``: the spec's
    VC as the caller read it (an experiment's pass, on the DB-API connection); ``session`` may
    then be None when the spec takes no dataset inputs. ``fit=False``: leave out :func:`unfit`
    (a dry run shows the spec with that reason)."""
    if backend == "unavailable":
        raise Refusal(503, "this platform's backend has no job runner yet")
    if vc is None:
        assert session is not None
        vc = catalog.member_vc(session, person, spec.vc)
    else:
        vc = catalog.require_member(vc, person, spec.vc)
    if fit and (refused := unfit(person, spec, inventory, backend, vc)):
        raise Refusal(422, refused)
    inputs = []
    for item in spec.inputs:
        assert session is not None
        dvc, name, ref = item.parts()
        d = datasets.visible(session, person, dvc, name)
        v = datasets.resolve(session, d, ref)
        inputs.append(
            {
                "dataset": item.dataset,
                "mount": str(item.mount),
                "version": v.number,
                "manifest": v.manifest,
                "version_id": v.id,
            }
        )
    return vc, inputs


def job_row(person: Person, spec: JobSpec, vc: str, code: dict, inputs: list, backend: str) -> dict[str, Any]:
    """Every column of a new, queued job (pure): :func:`create`'s, and the HPO driver's insert on
    the DB-API connection (``lifecycle.NEW_JOB``)."""
    return {
        "name": spec.name,
        "vc": vc,
        "user": person.name,
        "spec": spec.model_dump(mode="json"),
        "code": code,
        "inputs": inputs,
        "state": states.QUEUED,
        "reason": "waiting for admission",
        "priority": spec.priority_value,
        "created": utcnow(),
        "attempts": 0,
        "backend": backend,
        "hosts": [],
        "ports": {},
        "devices": {},
        "token_hash": "",
        "cancel_requested": False,
        "request": request_of(spec),
    }


def create(session: Session, person: Person, spec: JobSpec, code: dict, inventory: Resources, backend: str) -> Job:
    vc, inputs = check(session, person, spec, inventory, backend)
    job = Job(**job_row(person, spec, vc.name, code, inputs, backend))
    session.add(job)
    session.flush()
    pin_inputs(session, job.id, job.inputs)
    return job


def pin_inputs(session: Session, job_id: int, inputs: list[dict[str, Any]]) -> None:
    """``dataset_refs`` rows (kind ``job``) so the input versions are not deleted meanwhile."""
    for i in inputs:
        if session.get(DatasetVersion, i["version_id"]) is None:
            raise Refusal(409, f"input {i['dataset']} (version {i['version']}) was deleted")
        exists = session.scalar(
            select(DatasetRef.id).where(
                DatasetRef.version_id == i["version_id"], DatasetRef.kind == "job", DatasetRef.ref == str(job_id)
            )
        )
        if exists is None:
            session.add(DatasetRef(version_id=i["version_id"], kind="job", ref=str(job_id)))


def visible(session: Session, person: Person, job_id: int) -> Job:
    job = session.get(Job, job_id)
    if job is None or not (person.admin or is_member(person, catalog.get_vc(session, job.vc).groups)):
        raise Refusal(404, f"there is no job {job_id}")
    return job


def require_owner(person: Person, job: Job, what: str) -> None:
    if not (person.admin or person.name == job.user):
        raise Refusal(403, f"{person.name} may not {what} job {job.id} of {job.user}")


def job_dict(job: Job, position: int | None = None, runs: list[int] | None = None) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.name,
        "vc": job.vc,
        "user": job.user,
        "state": job.state,
        "reason": job.reason,
        "priority": job.priority,
        "position": position if job.state == states.QUEUED else None,
        "spec": job.spec,
        "code": job.code,
        "inputs": [{k: i[k] for k in ("dataset", "mount", "version", "manifest")} for i in job.inputs],
        "created": job.created,
        "admitted": job.admitted,
        "started": job.started,
        "finished": job.finished,
        "exit_code": job.exit_code,
        "attempts": job.attempts,
        "backend": job.backend,
        "backend_ref": job.backend_ref,
        "hosts": job.hosts,
        "ports": job.ports,
        "devices": job.devices,
        "runs": runs or [],
    }


def run_ids(session: Session, job_id: int) -> list[int]:
    return list(session.scalars(select(Run.id).where(Run.job_id == job_id).order_by(Run.id)))
