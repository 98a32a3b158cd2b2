"""Experiments in the database: create, who may see and change one, views, and a new trial
(its row and its job in one transaction, so a kill -9 leaves both or neither)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..core.authz import Person, is_member
from ..core.errors import Refusal, describe_validation
from ..core.fastsql import Transaction
from ..core.models import utcnow
from ..jobs import lifecycle
from ..jobs import records as jobs
from ..jobs.models import Job
from ..jobs.spec import per_job_resources, spec_from_dict
from ..jobs.spec_errors import JobSpecError
from ..vcs import catalog, quota
from ..vcs.catalog import VCFacts
from ..vcs.models import Allocation
from ..vcs.quantities import Resources
from . import channel, pass_rows, states
from .models import Experiment, Trial
from .pass_rows import ExperimentRow, TrialRow
from .schemas import ExperimentSpec


def parse(doc: Any) -> ExperimentSpec:
    if not isinstance(doc, dict):
        raise Refusal(422, "experiment: must be a map of fields")
    try:
        spec = ExperimentSpec.model_validate(doc)
    except ValidationError as e:
        raise Refusal(422, describe_validation(list(e.errors()))) from None
    try:  # the template must be a job spec, checked once here
        trial_spec(spec.model_dump(mode="json"), 0, 0)
    except JobSpecError as e:
        raise Refusal(422, f"template: {e}") from None
    return spec


#: backends whose trial processes cannot write files the service reads (a pod's filesystem)
NO_SHARED_FILES = frozenset({"kube"})
FORWARD = ["python", "-m", "yitong_lab.hpo.forward", "--"]


def forwarded(config: dict[str, Any], backend: str) -> bool:
    """Whether trials report NNI's file channel through ``yitong_lab.hpo.forward`` (HTTP from the
    trial's machine): on backends without a shared filesystem, or when the template asks
    (``env: {YT_HPO_CHANNEL: forward}``)."""
    return backend in NO_SHARED_FILES or (config["template"].get("env") or {}).get("YT_HPO_CHANNEL") == "forward"


def trial_spec(
    config: dict[str, Any],
    experiment_id: int,
    number: int,
    env: dict[str, str] | None = None,
    forward: bool = False,
) -> Any:
    doc = dict(config["template"])
    # least privilege: a trial reports with its job's own token and needs no hub token of its
    # owner unless its template asks (``hub_token: true``: trial code that calls yt or the SDK)
    doc.setdefault("hub_token", False)
    doc["env"] = {**(doc.get("env") or {}), **(env or {})}
    if forward and doc.get("command"):
        command = doc["command"]
        doc["command"] = [*FORWARD, *(["bash", "-c", command] if isinstance(command, str) else command)]
    doc["name"] = f"hpo{experiment_id}-{number}"[:32]
    doc["vc"] = config["vc"]
    return spec_from_dict(doc)


def create(session: Session, person: Person, spec: ExperimentSpec) -> Experiment:
    vc = catalog.member_vc(session, person, spec.vc)
    exp = Experiment(
        name=spec.name,
        vc=vc.name,
        user=person.name,
        groups=list(person.groups),
        config=spec.model_dump(mode="json"),
        state=states.EXP_RUNNING,
        reason="",
        used_seconds=0.0,
        resumed=utcnow(),
    )
    session.add(exp)
    session.flush()
    return exp


def warnings(session: Session, person: Person, spec: ExperimentSpec) -> list[str]:
    """What the person should know at create (nothing is refused): ``concurrency`` trials that
    cannot run at once beside their running servers within the VC's quota and their user caps."""
    vc = catalog.member_vc(session, person, spec.vc)
    request = per_job_resources(trial_spec(spec.model_dump(mode="json"), 0, 0))
    servers = session.scalars(
        select(Allocation.resources).where(
            Allocation.user == person.name, Allocation.vc == vc.name, Allocation.kind == "server"
        )
    )
    fit = quota.at_once(request, quota.VCLimits(vc.name, vc.quota, vc.user_caps), quota.total(servers))
    if fit is None or fit[0] >= spec.concurrency:
        return []
    return [f"{fit[1]} (concurrency {spec.concurrency})"]


def visible(session: Session, person: Person, experiment_id: int) -> Experiment:
    exp = session.get(Experiment, experiment_id)
    if exp is None or not (person.admin or is_member(person, catalog.get_vc(session, exp.vc).groups)):
        raise Refusal(404, f"there is no experiment {experiment_id}")
    return exp


def require_owner(person: Person, exp: Experiment, what: str) -> None:
    if not (person.admin or person.name == exp.user):
        raise Refusal(403, f"{person.name} may not {what} experiment {exp.id} of {exp.user}")


def owner(exp: Experiment | ExperimentRow) -> Person:
    return Person(name=exp.user, admin=False, groups=list(exp.groups))


def new_trial(
    session: Session | None,
    tx: Transaction,
    exp: ExperimentRow,
    params: dict[str, Any],
    internal: dict[str, Any],
    workdir: Any,
    inventory: Resources,
    backend: str,
    number: int,
) -> TrialRow:
    """Insert trial ``number`` (the experiment's count of trials so far) and its job
    (``workdir(job_id)`` is the job's directory), and write its parameter file before the
    transaction commits, so the job never starts without it. ``tx`` runs in ``session``'s
    transaction (None when the trials take no dataset inputs): the inputs' checks and pins go
    through the ORM, the rows are written on ``tx``."""
    spec = trial_spec(exp.config, exp.id, number, forward=forwarded(exp.config, backend))
    person = owner(exp)
    row = tx.one(lifecycle.VC_FACTS, name=spec.vc)
    vc = catalog.require_member(VCFacts(*row) if row else None, person, spec.vc)
    vc, inputs = jobs.check(session, person, spec, inventory, backend, vc=vc)
    job = jobs.job_row(person, spec, vc.name, dict(exp.config.get("code") or {}), inputs, backend)
    ((job_id,),) = tx.run(lifecycle.NEW_JOB, **job)
    if inputs:
        assert session is not None  # check() resolved them through it
        jobs.pin_inputs(session, job_id, inputs)
    trial = TrialRow(
        id=0,
        number=number,
        job_id=job_id,
        params=params,
        internal=internal,
        state=states.RUNNING,
        reason="",
        intermediate=[],
        value=None,
        offset=0,
        created=job["created"],
        finished=None,
    )
    pass_rows.insert_trial(tx, exp.id, trial)
    # the job's own directory: handed to the job's account at launch in multi-user mode, so the
    # trial (NNI's runtime) can make .nni/ there; parameter.cfg stays the platform's, readable
    sys_dir = Path(workdir(job_id))
    env = channel.trial_env(sys_dir, exp.id, trial.id, number, params)  # the trial's id goes in its job's environment
    if not forwarded(exp.config, backend):  # the driver reads the trial's directory at its end
        env["YT_HPO_FINAL"] = "file"
    tx.run(lifecycle.SET_SPEC, id=job_id, spec={**job["spec"], "env": {**job["spec"].get("env", {}), **env}})
    channel.write_parameters(sys_dir, number, params)
    return trial


def revive_trial(session: Session, job_id: int) -> None:
    """A job being retried that is a trial: the trial runs again (same number, its results so far
    dropped) and a done experiment runs again until it ends. A stopped experiment, or one whose
    duration is spent, refuses: its driver would not run the trial (409 with why). Called inside
    the retry's transaction, before the job changes."""
    trial = session.scalar(select(Trial).where(Trial.job_id == job_id).with_for_update())
    if trial is None:
        return
    exp = session.get(Experiment, trial.experiment_id)
    if exp is None:
        return
    where = f"job {job_id} is trial {trial.number} of experiment {exp.id}"
    if exp.state == states.EXP_STOPPED:
        raise Refusal(409, f"{where}, which is stopped; resume the experiment, then retry the trial")
    limit = exp.config.get("max_duration")
    if exp.state != states.EXP_RUNNING and limit and exp.used_seconds >= limit:
        raise Refusal(409, f"{where}, whose duration ({limit} s) is spent; clone it to search again")
    if trial.state == states.RUNNING:  # its job ended and the driver has not seen it yet: it will
        return
    trial.state, trial.reason, trial.finished = states.RUNNING, "", None
    trial.value, trial.intermediate = None, []  # the file channel's offset stays: old records stay read
    if exp.state != states.EXP_RUNNING:
        exp.state, exp.reason, exp.resumed, exp.finished = states.EXP_RUNNING, "", utcnow(), None


#: a trial with its job's state, reason and start (what an answer shows of it: states.shown)
_WITH_JOB = select(Trial, Job.state, Job.reason, Job.started).outerjoin(Job, Job.id == Trial.job_id)


def rows(session: Session, experiment_id: int) -> list[dict[str, Any]]:
    """The experiment's trials as answered: each mirrors its job (``waiting`` until it runs,
    ``started`` when it did)."""
    query = _WITH_JOB.where(Trial.experiment_id == experiment_id)
    return [
        trial_dict(t, job_state, job_reason, started) for t, job_state, job_reason, started in session.execute(query)
    ]


def trial_dict(
    t: Trial | TrialRow, job_state: str | None = None, job_reason: str | None = None, started: Any = None
) -> dict[str, Any]:
    """A trial's row; with its job's state (an answer, not the driver's pass) its shown state,
    reason and the job's start (a trial's duration counts from it, not from the wait)."""
    out = {
        "id": t.id,
        "number": t.number,
        "job_id": t.job_id,
        "state": t.state,
        "reason": t.reason,
        "params": t.params,
        "internal": t.internal,
        "intermediate": list(t.intermediate),
        "value": t.value,
        "created": t.created,
        "finished": t.finished,
    }
    if job_state is not None:
        out["state"], out["reason"] = states.shown(t.state, t.reason, job_state, job_reason)
        out["job_state"], out["started"] = job_state, started
    return out


def best(exp: Experiment, trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    done = [t for t in trials if t["state"] == states.COMPLETE and t["value"] is not None]
    if not done:
        return None
    sign = 1 if exp.config["objective"]["direction"] == "maximize" else -1
    top = max(done, key=lambda t: (sign * t["value"], -t["number"]))
    return {"number": top["number"], "value": top["value"], "params": top["params"], "job_id": top["job_id"]}


def best_so_far(exp: Experiment, trials: list[dict[str, Any]]) -> list[float | None]:
    sign = 1 if exp.config["objective"]["direction"] == "maximize" else -1
    out: list[float | None] = []
    cur: float | None = None
    for t in sorted(trials, key=lambda t: t["number"]):
        if t["state"] == states.COMPLETE and t["value"] is not None and (cur is None or sign * t["value"] > sign * cur):
            cur = t["value"]
        out.append(cur)
    return out


MAX_POINTS = 10_000  # most points of one trial's intermediate curve in an answer


def thin(values: list[Any], limit: int | None) -> tuple[list[int] | None, list[Any]]:
    """At most ``limit`` points of a curve (pure): ``(None, values)`` when it fits, else the
    indices of evenly spaced steps (the first and the last kept) and their values."""
    n = len(values)
    if limit is None or n <= limit:
        return None, list(values)
    if limit <= 1:
        return [n - 1], [values[-1]]
    idx = sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)})
    return idx, [values[i] for i in idx]


def public_trial(t: dict[str, Any], points: int | None = None) -> dict[str, Any]:
    """A trial as answered: no tuner internals; ``steps`` (how many intermediate results it
    reported); a curve longer than ``points`` thinned, its kept step numbers in
    ``intermediate_steps``."""
    out = {k: v for k, v in t.items() if k != "internal"}
    out["steps"] = len(t["intermediate"])
    at, out["intermediate"] = thin(t["intermediate"], points)
    if at is not None:
        out["intermediate_steps"] = at
    return out


def summary(session: Session, exp: Experiment) -> dict[str, Any]:
    """The experiment with its counts per state and its best trial, from two small queries (not
    every trial's row): what a list or a progress bar shows."""
    out = experiment_dict(exp)
    counts: dict[str, int] = {}
    for state, job_state, n in session.execute(
        select(Trial.state, Job.state, func.count(Trial.id))
        .outerjoin(Job, Job.id == Trial.job_id)
        .where(Trial.experiment_id == exp.id)
        .group_by(Trial.state, Job.state)
    ):
        shown = states.shown(state, "", job_state, None)[0]
        counts[shown] = counts.get(shown, 0) + n
    value = Trial.value.desc() if exp.config["objective"]["direction"] == "maximize" else Trial.value.asc()
    top = session.scalar(
        select(Trial)
        .where(Trial.experiment_id == exp.id, Trial.state == states.COMPLETE, Trial.value.is_not(None))
        .order_by(value, Trial.number)
        .limit(1)
    )
    best = {"number": top.number, "value": top.value, "params": top.params, "job_id": top.job_id} if top else None
    return out | {"counts": counts, "best": best}


def experiment_dict(
    exp: Experiment, trials: list[dict[str, Any]] | None = None, points: int | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": exp.id,
        "name": exp.name,
        "vc": exp.vc,
        "user": exp.user,
        "state": exp.state,
        "reason": exp.reason,
        "config": exp.config,
        "created": exp.created,
        "finished": exp.finished,
    }
    if trials is not None:
        public = [public_trial(t, points) for t in trials]
        counts: dict[str, int] = {}
        for t in trials:
            counts[t["state"]] = counts.get(t["state"], 0) + 1
        out |= {"trials": public, "counts": counts, "best": best(exp, trials), "best_so_far": best_so_far(exp, trials)}
    return out
