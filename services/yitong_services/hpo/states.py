"""Experiment and trial states (pure).

A trial is ``running`` from its creation (its job may still be queued) until its job ends:
``complete`` (a final result), ``pruned`` (the assessor stopped it: distinct from failed),
``failed`` (the job failed, or ended without a final result), ``cancelled`` (stopped with its
experiment). An experiment is ``running``, ``stopped`` (by a person; resume continues it) or
``done`` (its trial budget or duration is spent and no trial runs).
"""

from __future__ import annotations

RUNNING, COMPLETE, PRUNED, FAILED, CANCELLED = "running", "complete", "pruned", "failed", "cancelled"
TRIAL_TERMINAL = frozenset({COMPLETE, PRUNED, FAILED, CANCELLED})
EXP_RUNNING, EXP_STOPPED, EXP_DONE = "running", "stopped", "done"
