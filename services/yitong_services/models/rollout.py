"""Rolling and canary deployments of an endpoint (pure): replicas, their traffic shares, the
endpoint's state, and which replica answers the next request.

A replica is a dict kept in the endpoint's row::

    {"job": 12, "version_id": 3, "number": 2, "socket": ".../http.sock", "uid": 1001, "dir": "...",
     "weight": 90, "routed": True, "draining": None}

``weight`` is the target share of traffic (0-100) of the replica's *version*: every replica of
a version carries the same weight, and the route splits the version's share evenly among its
routed replicas (so a 10% canary stays 10% of requests whatever the replica counts); ``routed``
says the route sends it requests (set once its server answered ``/v2/health/ready``);
``refused`` (when set) says why it never will (its socket is held by another account's process);
``draining`` is the time (epoch seconds) it left the route, after which it is stopped once its
requests in flight are answered.

An endpoint runs ``scale`` replicas (1..MAX_REPLICAS) of every version with a share. A roll to a
new version: its replicas start (jobs: they queue when the VC's quota is full), the old ones keep
serving; once one is ready it joins the route, and every routed replica of share 0 leaves the
route, drains and stops. So some routed replica answers at every moment. Scaling down drains the
extra replicas (queued or starting ones first, then the newest).
"""

from __future__ import annotations

from typing import Any

from ..jobs import states as job_states

DRAIN_GRACE = 2.0  # seconds a replica stays up after leaving the route, before its in-flight count is trusted
DRAIN_LIMIT = 120.0  # seconds a drain waits for requests in flight at most
MAX_REPLICAS = 8  # replicas per version: each holds its profile's allocation under the VC's quota


def version_key(number: int) -> str:
    return f"v{number}"


def target_weights(replicas: list[dict[str, Any]], number: int, share: int) -> dict[int, int]:
    """Job id -> weight after deploying version ``number`` with ``share`` percent: the version's
    replicas get ``share``, the rest goes to the replicas of the current primary version (the one
    routed with the largest share, or, none routed yet, the one with the largest share); every
    other replica gets 0. Draining replicas are never reused."""
    live = [r for r in replicas if r.get("draining") is None]
    weights = {r["job"]: 0 for r in replicas}
    for r in live:
        if r["number"] == number:
            weights[r["job"]] = share
    others = [r for r in live if r["number"] != number and r["weight"] > 0]
    if share < 100 and others:
        top = max(others, key=lambda r: (bool(r.get("routed")), r["weight"], r["job"]))["number"]
        for r in others:
            if r["number"] == top:
                weights[r["job"]] = 100 - share
    return weights


def scale_plan(replicas: list[dict[str, Any]], count: int) -> tuple[dict[int, int], list[int]]:
    """``count`` replicas for every version with a share: how many to add by version number, and
    the jobs of the extra ones to drain (queued or starting ones first, then the newest)."""
    live = [r for r in replicas if r.get("draining") is None and r["weight"] > 0]
    add: dict[int, int] = {}
    drop: list[int] = []
    for number in sorted({r["number"] for r in live}):
        mine = [r for r in live if r["number"] == number]
        if len(mine) < count:
            add[number] = count - len(mine)
        extra = sorted(mine, key=lambda r: (bool(r.get("routed")), -r["job"]))[: max(len(mine) - count, 0)]
        drop += [r["job"] for r in extra]
    return add, drop


def plan(
    replicas: list[dict[str, Any]], count: int, number: int | None = None, share: int = 100
) -> tuple[list[dict[str, Any]], dict[int, int], dict[int, int], list[int]]:
    """A deploy of version ``number`` with ``share`` percent (none: a scale only) on ``count``
    replicas per version: the replicas with their new weights, how many to add by version, the
    share each added one carries, and the jobs of the extra ones to drain."""
    reps = [dict(r) for r in replicas]
    if number is not None:
        weights = target_weights(reps, number, share)
        for r in reps:
            r["weight"] = weights[r["job"]]
    add, drop = scale_plan(reps, count)
    if number is not None and not any(r["number"] == number and r.get("draining") is None for r in reps):
        add[number] = count
    shares = {
        n: max((r["weight"] for r in reps if r["number"] == n and r.get("draining") is None), default=share)
        for n in add
    }
    return reps, add, shares, drop


def traffic(replicas: list[dict[str, Any]]) -> dict[str, int]:
    """Target shares by version (``{"v1": 90, "v2": 10}``)."""
    out: dict[str, int] = {}
    for r in replicas:
        if r["weight"] > 0 and r.get("draining") is None:
            out[version_key(r["number"])] = max(out.get(version_key(r["number"]), 0), r["weight"])
    return out


def candidates(replicas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replicas the route may send the next request to: routed ones with a share, else (a roll
    whose new replica is not ready yet) any routed one."""
    routed = [r for r in replicas if r.get("routed")]
    return [r for r in routed if r["weight"] > 0] or routed


def pick(choices: list[dict[str, Any]], current: dict[int, float]) -> dict[str, Any]:
    """Smooth weighted round robin (nginx's): every request adds each replica's weight (its
    version's share over the version's replicas among ``choices``) to its running score, the
    highest score answers and loses the total. Shares hold exactly over every 100 requests,
    interleaved (10 of every 100 for a 10% canary, however many replicas each version has)."""
    if len(choices) == 1:  # the usual case: one replica routed (its score would stay 0 anyway)
        return choices[0]
    per_version: dict[int, int] = {}
    for r in choices:
        per_version[r["number"]] = per_version.get(r["number"], 0) + 1
    weights = {r["job"]: (r["weight"] / per_version[r["number"]] if r["weight"] > 0 else 1.0) for r in choices}
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


def _job_words(replica: dict[str, Any], jobs: dict[int, tuple[str, str]]) -> str:
    if replica.get("refused"):
        return f"replica (job {replica['job']}) refused: {replica['refused']}"
    job_state, why = jobs.get(replica["job"], ("gone", ""))
    if job_state == job_states.QUEUED:
        return f"queued: {why}"
    if job_state in job_states.ACTIVE:
        return "starting"
    return f"replica (job {replica['job']}) {job_state}: {why}".rstrip(": ")


def state(replicas: list[dict[str, Any]], jobs: dict[int, tuple[str, str]], scale: int = 1) -> tuple[str, str]:
    """``(state, reason)`` of an endpoint from its replicas and their jobs (id -> (state, reason)):
    ``ready`` while a replica answers (the reason tells of a roll under way, replicas still queued
    or starting, or fewer running than ``scale``), else ``queued`` (the job's reason names the
    quota and VC), ``starting``, or ``failed`` with the job's reason."""
    routed = [r for r in replicas if r.get("routed")]
    pending = [r for r in replicas if not r.get("routed") and r["weight"] > 0 and r.get("draining") is None]
    if routed:
        if pending:
            r = pending[0]
            key = version_key(r["number"])
            if not any(x["number"] == r["number"] and x["weight"] > 0 for x in routed):
                if r.get("refused"):
                    return "ready", f"rolling to {key} stopped: its replica was refused: {r['refused']}"
                job_state, why = jobs.get(r["job"], ("gone", ""))
                if job_state == job_states.QUEUED:
                    return "ready", f"rolling to {key}: queued: {why}"
                if job_state in job_states.TERMINAL or job_state == "gone":
                    return "ready", f"rolling to {key} stopped: its replica {job_state}: {why}"
                return "ready", f"rolling to {key}: starting"
            up = sum(1 for x in routed if x["number"] == r["number"] and x["weight"] > 0)
            waiting = sum(1 for x in pending if x["number"] == r["number"])
            return "ready", f"{key}: {up} of {up + waiting} replicas ready; {_job_words(r, jobs)}"
        leaving = sorted(
            {version_key(r["number"]) for r in replicas if r.get("draining") is not None or not r["weight"]}
        )
        if leaving:  # left the route (or about to, at the driver's next pass) and not stopped yet
            return "ready", f"draining {', '.join(leaving)}"
        short = [r for r in routed if r["weight"] > 0]
        by_version = {r["number"]: sum(1 for x in short if x["number"] == r["number"]) for r in short}
        fewer = sorted((n, c) for n, c in by_version.items() if c < scale)
        if fewer:
            n, c = fewer[0]
            return "ready", f"{version_key(n)}: {c} of {scale} replicas run (one ended); scale again to replace it"
        return "ready", ""
    if not pending:
        return "failed", "no replica runs; deploy a version again"
    r = pending[0]
    if r.get("refused"):
        return "failed", f"replica {version_key(r['number'])} (job {r['job']}) refused: {r['refused']}"
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
