"""Experiment and trial states (pure).

A trial is stored ``running`` from its creation until its job ends; it is shown ``waiting``
(with its job's wait reason) while the job is queued or not started yet (:func:`shown`):
``complete`` (a final result), ``pruned`` (the assessor stopped it: distinct from failed),
``failed`` (the job failed, or ended without a final result), ``cancelled`` (stopped with its
experiment). An experiment is ``running``, ``stopped`` (by a person; resume continues it) or
``done`` (its trial budget or duration is spent and no trial runs).
"""

from __future__ import annotations

RUNNING, COMPLETE, PRUNED, FAILED, CANCELLED = "running", "complete", "pruned", "failed", "cancelled"
TRIAL_TERMINAL = frozenset({COMPLETE, PRUNED, FAILED, CANCELLED})
EXP_RUNNING, EXP_STOPPED, EXP_DONE = "running", "stopped", "done"
WAITING = "waiting"  # shown only: a running trial whose job has not started (never stored)
_NOT_STARTED = frozenset({"queued", "admitted"})  # job states (jobs/states.py)


def shown(state: str, reason: str, job_state: str | None, job_reason: str | None) -> tuple[str, str]:
    """A trial's state and reason as answered: a running trial mirrors its job, ``waiting`` with
    the job's wait reason (``waiting: user cap ...``) until the job runs."""
    if state != RUNNING or job_state not in _NOT_STARTED:
        return state, reason
    why = job_reason or ("starting" if job_state == "admitted" else "queued")
    return WAITING, why if why.startswith("waiting") else f"waiting: {why}"
