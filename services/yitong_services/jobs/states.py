"""The job state machine (pure): states, allowed transitions, terminal states.

queued -> admitted -> running -> succeeded | failed | cancelled | preempted; a failed, cancelled
or preempted job may be retried (back to queued, same id, one more attempt).
"""

from __future__ import annotations

QUEUED, ADMITTED, RUNNING = "queued", "admitted", "running"
SUCCEEDED, FAILED, CANCELLED, PREEMPTED = "succeeded", "failed", "cancelled", "preempted"
STATES = (QUEUED, ADMITTED, RUNNING, SUCCEEDED, FAILED, CANCELLED, PREEMPTED)
TERMINAL = frozenset({SUCCEEDED, FAILED, CANCELLED, PREEMPTED})
ACTIVE = frozenset({ADMITTED, RUNNING})  # these hold an allocation
RETRYABLE = frozenset({FAILED, CANCELLED, PREEMPTED})

TRANSITIONS: dict[str, frozenset[str]] = {
    QUEUED: frozenset({ADMITTED, CANCELLED, FAILED}),
    ADMITTED: frozenset({RUNNING, FAILED, CANCELLED, SUCCEEDED}),
    RUNNING: frozenset({SUCCEEDED, FAILED, CANCELLED, PREEMPTED}),
    SUCCEEDED: frozenset(),
    FAILED: frozenset({QUEUED}),
    CANCELLED: frozenset({QUEUED}),
    PREEMPTED: frozenset({QUEUED}),
}


class TransitionError(ValueError):
    pass


def can_move(old: str, new: str) -> bool:
    return new in TRANSITIONS.get(old, frozenset())


def check_move(old: str, new: str) -> str:
    """``new`` if the move is allowed, else TransitionError naming both states."""
    if not can_move(old, new):
        raise TransitionError(f"a {old} job cannot become {new}")
    return new


def final_state(exit_code: int | None, cancel_requested: bool) -> str:
    """The terminal state of a job whose processes ended."""
    if cancel_requested:
        return CANCELLED
    return SUCCEEDED if exit_code == 0 else FAILED
