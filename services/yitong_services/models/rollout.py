"""Rolling and canary deployments of an endpoint (pure): replicas, their traffic shares, the
endpoint's state, and which replica answers the next request.

A replica is a dict kept in the endpoint's row::

    {"job": 12, "version_id": 3, "number": 2, "port": 40123, "dir": "...",
     "weight": 90, "routed": True, "draining": None}

``weight`` is the replica's target share of traffic (0-100); ``routed`` says the route sends it
requests (set once its server answered ``/v2/health/ready``); ``draining`` is the time (epoch
seconds) it left the route, after which it is stopped once its requests in flight are answered.

A roll to a new version: a replica of it starts (a job: it queues when the VC's quota is full),
the old replicas keep serving; once it is ready it joins the route, and every routed replica of
share 0 leaves the route, drains and stops. So some routed replica answers at every moment.
"""

from __future__ import annotations

from typing import Any

from ..jobs import states as job_states

DRAIN_GRACE = 2.0  # seconds a replica stays up after leaving the route, before its in-flight count is trusted
DRAIN_LIMIT = 120.0  # seconds a drain waits for requests in flight at most


def version_key(number: int) -> str:
    return f"v{number}"


def target_weights(replicas: list[dict[str, Any]], number: int, share: int) -> dict[int, int]:
    """Job id -> weight after deploying version ``number`` with ``share`` percent: the rest goes
    to the current primary (the routed replica of another version with the largest weight, or,
    none routed yet, the one with the largest weight); every other replica gets 0."""
    new = [r for r in replicas if r["number"] == number and r.get("draining") is None]
    others = [r for r in replicas if r["number"] != number and r.get("draining") is None and r["weight"] > 0]
    weights = {r["job"]: 0 for r in replicas}
    if new:
        weights[new[0]["job"]] = share
    if share < 100 and others:
        primary = max(others, key=lambda r: (bool(r.get("routed")), r["weight"], r["job"]))
        weights[primary["job"]] = 100 - share
    return weights


def traffic(replicas: list[dict[str, Any]]) -> dict[str, int]:
    """Target shares by version (``{"v1": 90, "v2": 10}``)."""
    out: dict[str, int] = {}
    for r in replicas:
        if r["weight"] > 0:
            out[version_key(r["number"])] = out.get(version_key(r["number"]), 0) + r["weight"]
    return out


def candidates(replicas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replicas the route may send the next request to: routed ones with a share, else (a roll
    whose new replica is not ready yet) any routed one."""
    routed = [r for r in replicas if r.get("routed")]
    return [r for r in routed if r["weight"] > 0] or routed


def pick(choices: list[dict[str, Any]], current: dict[int, float]) -> dict[str, Any]:
    """Smooth weighted round robin (nginx's): every request adds each replica's weight to its
    running score, the highest score answers and loses the total. Shares hold exactly over every
    ``sum(weights)`` requests, interleaved (10 of every 100 for a 10% canary)."""
    weights = {r["job"]: max(r["weight"], 0) or 1 for r in choices}
    total = sum(weights.values())
    for job in list(current):
        if job not in weights:
            del current[job]
    for job, w in weights.items():
        current[job] = current.get(job, 0.0) + w
    best = max(choices, key=lambda r: (current[r["job"]], -r["job"]))
    current[best["job"]] -= total
    return best


def to_drain(replicas: list[dict[str, Any]]) -> list[int]:
    """Routed replicas of share 0 that leave the route now: another replica with a share is
    routed (answering), so no request goes unanswered."""
    if not any(r.get("routed") and r["weight"] > 0 for r in replicas):
        return []
    return [r["job"] for r in replicas if r.get("routed") and r["weight"] == 0]


def to_stop(replicas: list[dict[str, Any]], inflight: dict[int, int], now: float) -> list[int]:
    """Replicas to stop: drained ones whose requests are answered (or that waited too long), and
    ones of share 0 that never joined the route (a superseded canary still queued or starting)."""
    out = []
    for r in replicas:
        draining = r.get("draining")
        if draining is not None:
            waited = now - draining
            if waited >= DRAIN_LIMIT or (waited >= DRAIN_GRACE and not inflight.get(r["job"])):
                out.append(r["job"])
        elif not r.get("routed") and r["weight"] == 0:
            out.append(r["job"])
    return out


def state(replicas: list[dict[str, Any]], jobs: dict[int, tuple[str, str]]) -> tuple[str, str]:
    """``(state, reason)`` of an endpoint from its replicas and their jobs (id -> (state, reason)):
    ``ready`` while a replica answers (the reason tells of a roll under way), else ``queued`` (the
    job's reason names the quota and VC), ``starting``, or ``failed`` with the job's reason."""
    routed = [r for r in replicas if r.get("routed")]
    pending = [r for r in replicas if not r.get("routed") and r["weight"] > 0 and r.get("draining") is None]
    if routed:
        if pending:
            r = pending[0]
            job_state, why = jobs.get(r["job"], ("gone", ""))
            if job_state == job_states.QUEUED:
                return "ready", f"rolling to {version_key(r['number'])}: queued: {why}"
            if job_state in job_states.TERMINAL or job_state == "gone":
                return "ready", f"rolling to {version_key(r['number'])} stopped: its replica {job_state}: {why}"
            return "ready", f"rolling to {version_key(r['number'])}: starting"
        leaving = sorted(
            {version_key(r["number"]) for r in replicas if r.get("draining") is not None or not r["weight"]}
        )
        if leaving:  # left the route (or about to, at the driver's next pass) and not stopped yet
            return "ready", f"draining {', '.join(leaving)}"
        return "ready", ""
    if not pending:
        return "failed", "no replica runs; deploy a version again"
    r = pending[0]
    job_state, why = jobs.get(r["job"], ("gone", ""))
    if job_state == job_states.QUEUED:
        return "queued", why
    if job_state in job_states.ACTIVE:
        return "starting", ""
    return "failed", f"replica {version_key(r['number'])} (job {r['job']}) {job_state}: {why}".rstrip(": ")


def primary(replicas: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The replica whose version the endpoint names: the largest share (the newest on a tie)."""
    live = [r for r in replicas if r.get("draining") is None]
    return max(live, key=lambda r: (r["weight"], r["job"])) if live else None


class Router:
    """The route's memory of one service process: requests in flight per replica (a drain waits
    for them) and the weighted round robin's scores per endpoint."""

    def __init__(self) -> None:
        self.inflight: dict[int, int] = {}
        self.scores: dict[str, dict[int, float]] = {}

    def choose(self, name: str, replicas: list[dict[str, Any]], tried: set[int]) -> dict[str, Any] | None:
        choices = [r for r in candidates(replicas) if r["job"] not in tried]
        if not choices:
            return None
        return pick(choices, self.scores.setdefault(name, {}))

    def enter(self, job: int) -> None:
        self.inflight[job] = self.inflight.get(job, 0) + 1

    def leave(self, job: int) -> None:
        left = self.inflight.get(job, 0) - 1
        if left > 0:
            self.inflight[job] = left
        else:
            self.inflight.pop(job, None)
