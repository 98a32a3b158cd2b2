"""The statements of an attempt's launch, start and end, as Core built from the models.

The job manager runs them on the DB-API connection (:mod:`..core.fastsql`): every job pays for
them once per attempt, so they are kept out of the Session's per-statement work. Every other
read and write of jobs goes through the ORM.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, bindparam, delete, func, insert, null, select, update

from ..core.fastsql import bound
from ..datasets.models import DatasetRef
from ..vcs.models import VC, Allocation
from . import states
from .models import Job, Run

#: the columns of a new job (``records.job_row``)
JOB_COLUMNS = (
    "name",
    "vc",
    "user",
    "spec",
    "code",
    "inputs",
    "state",
    "reason",
    "priority",
    "created",
    "attempts",
    "backend",
    "hosts",
    "ports",
    "devices",
    "token_hash",
    "cancel_requested",
    "request",
)

#: what a launch needs of its job, in the order :func:`..manager.facts` takes them
FACTS = (Job.id, Job.name, Job.vc, Job.user, Job.attempts, Job.spec, Job.inputs, Job.code, Job.devices)

ACTIVE = select(Job.id, Job.state, Job.backend_ref).where(Job.state.in_(states.ACTIVE))

# ---- launch: the job and its VC's quota in one statement; the attempt's token
PREPARE = select(*FACTS, VC.quota).outerjoin(VC, VC.name == Job.vc).where(Job.id == bindparam("id"))
SET_TOKEN = update(Job).where(Job.id == bindparam("id")).values(token_hash=bindparam("token_hash"))

# ---- start: the job moves to running; the attempt's run (ledger record) holds its own id
START_STATE = select(Job.state, Job.cancel_requested, Job.reason).where(Job.id == bindparam("id"))
START = update(Job).where(Job.id == bindparam("id")).values(bound("backend_ref", "state", "started", "hosts", "ports"))
NEW_RUN = insert(Run).values(bound("job_id", "attempt", "record", "metrics", "created")).returning(Run.id)
SET_RECORD = update(Run).where(Run.id == bindparam("id")).values(record=bindparam("record"))
SET_RECORD_METRICS = SET_RECORD.values(metrics=bindparam("metrics"))

# ---- end: its allocation is freed, its run's record completed, its inputs unpinned
END_STATE = select(Job.state, Job.cancel_requested, Job.spec, Job.attempts, Job.inputs).where(Job.id == bindparam("id"))
FREE = delete(Allocation).where(Allocation.kind == "job", Allocation.ref == bindparam("ref"))
RUN_OF = select(Run.id, Run.record, Run.metrics).where(
    Run.job_id == bindparam("id"), Run.attempt == bindparam("attempt")
)
END = update(Job).where(Job.id == bindparam("id")).values(bound("state", "reason", "exit_code", "finished"))
RETRY = END.values(backend_ref=null())
UNPIN = delete(DatasetRef).where(DatasetRef.kind == "job", DatasetRef.ref == bindparam("ref"))

# ---- admission (queue.py): the queue, the chunk's VCs and jobs (locked), the usage, the writes
QUEUED = select(Job.id, Job.vc, Job.priority, Job.created).where(Job.state == states.QUEUED)
CHUNK_VCS = (
    select(VC.name, VC.quota, VC.user_caps).where(VC.name.in_(bindparam("names", expanding=True))).with_for_update()
)
DEVICE_LOCK = select(func.pg_advisory_xact_lock(bindparam("key", type_=BigInteger)))
CHUNK_JOBS = (
    select(Job.id, Job.user, Job.spec, Job.request, Job.reason)
    .where(Job.id.in_(bindparam("ids", expanding=True)), Job.state == states.QUEUED)
    .with_for_update()
)
ALLOCATED = select(Allocation.vc, Allocation.user, Allocation.resources, Allocation.devices)
ACTIVE_DEVICES = select(Job.devices).where(Job.state.in_(states.ACTIVE))
DROP_STALE = (
    delete(Allocation)
    .where(Allocation.kind == "job", Allocation.ref.in_(bindparam("refs", expanding=True)))
    .returning(Allocation.id, Allocation.ref)
)
ALLOCATE = insert(Allocation).values(bound("user", "vc", "profile", "kind", "ref", "resources", "created"))
ADMIT = (
    update(Job)
    .where(Job.id == bindparam("id"))
    .values(bound("devices", "state", "admitted", "request"))
    .values(attempts=Job.attempts + 1, reason="", backend_ref=null())
)
SET_REASON = update(Job).where(Job.id == bindparam("id"), Job.state == states.QUEUED).values(reason=bindparam("reason"))
REASONS = select(Job.id, Job.reason).where(Job.id.in_(bindparam("ids", expanding=True)), Job.state == states.QUEUED)

# ---- submit on the DB-API connection (an experiment's trials): the VC it checks, records.job_row's columns
VC_FACTS = select(VC.name, VC.groups, VC.quota, VC.user_caps).where(VC.name == bindparam("name"))
NEW_JOB = insert(Job).values(bound(*JOB_COLUMNS)).returning(Job.id)
SET_SPEC = update(Job).where(Job.id == bindparam("id")).values(spec=bindparam("spec"))
