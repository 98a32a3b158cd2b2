"""The rule kinds (pure): what each measures, its threshold's bounds, and its PromQL expression.

A rule is ``kind`` + ``threshold`` (+ ``vc``); :func:`expression` turns it into the PromQL that
Prometheus evaluates. The metrics are the platform's ``/metrics`` (``yitong_*``, alerts/metrics.py)
and the node exporter's (``node_*``); ``up`` is Prometheus's own.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    summary: str  # one line, with {threshold}
    unit: str  # of the threshold: "%", "jobs", "" (none taken)
    default: float | None
    low: float = 0.0
    high: float = 100.0
    per_vc: bool = True  # may be limited to one VC


KINDS: dict[str, Kind] = {
    "node_memory": Kind("node memory in use above {threshold}%", "%", 70.0, per_vc=False),
    "node_cpu": Kind("node CPU busy above {threshold}%", "%", 90.0, per_vc=False),
    "accelerator_utilization": Kind("accelerator busy above {threshold}%", "%", 95.0, per_vc=False),
    "accelerator_idle": Kind("accelerator allocated but at most {threshold}% busy", "%", 0.0),
    "job_failed": Kind("at least {threshold:g} job(s) failed recently", "jobs", 1.0, low=1.0, high=1e6),
    "quota_exhausted": Kind("a VC uses at least {threshold}% of a quota", "%", 100.0, low=1.0),
    "service_down": Kind("a monitored service does not answer its scrape", "", None, per_vc=False),
    "expression": Kind("a PromQL condition of the admin's", "", None),
}

SEVERITIES = ("info", "warning", "critical")


class RuleError(ValueError):
    """A rule that cannot be built; the message is the sentence a person reads."""


def check(kind: str, threshold: float | None, vc: str | None, expr: str) -> float | None:
    """The threshold to store (the kind's default when none is given), or :class:`RuleError`."""
    spec = KINDS.get(kind)
    if spec is None:
        raise RuleError(f"unknown rule kind {kind!r}: one of {', '.join(KINDS)}")
    if vc is not None and not spec.per_vc:
        raise RuleError(f"a {kind} rule is cluster-wide: leave vc out")
    if kind == "expression":
        if not expr.strip():
            raise RuleError("an expression rule needs expr, a PromQL condition")
    elif expr:
        raise RuleError(f"only expression rules take expr; a {kind} rule is built from its threshold")
    if not spec.unit:
        if threshold is not None:
            raise RuleError(f"a {kind} rule takes no threshold")
        return None
    value = spec.default if threshold is None else threshold
    assert value is not None
    if not math.isfinite(value) or not spec.low <= value <= spec.high:
        raise RuleError(f"the threshold of a {kind} rule is {spec.unit} from {spec.low:g} to {spec.high:g}")
    return value


def _sel(vc: str | None, **labels: str) -> str:
    """A label selector; values are quoted as PromQL strings (JSON's escapes are PromQL's)."""
    pairs = dict(labels)
    if vc is not None:
        pairs["vc"] = vc
    inner = ",".join(f"{k}={json.dumps(v)}" for k, v in pairs.items())
    return "{" + inner + "}" if inner else ""


def expression(kind: str, threshold: float | None, vc: str | None, expr: str, scrape_interval: float) -> str:
    """The PromQL of a checked rule."""
    t = f"{threshold:g}" if threshold is not None else ""
    window = f"{int(max(60, 4 * scrape_interval))}s"
    node = _sel(None, job="node")
    if kind == "node_memory":
        return f"100 * (1 - node_memory_MemAvailable_bytes{node} / node_memory_MemTotal_bytes{node}) > {t}"
    if kind == "node_cpu":
        idle = _sel(None, job="node", mode="idle")
        return f"100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{idle}[{window}]))) > {t}"
    if kind == "accelerator_utilization":
        return f"yitong_accelerator_utilization_percent > {t}"
    if kind == "accelerator_idle":
        return (
            f"(yitong_accelerator_allocated{_sel(vc)} == 1)"
            f" and on (node, index) (yitong_accelerator_utilization_percent <= {t})"
        )
    if kind == "job_failed":
        return f"yitong_jobs_failed_recent{_sel(vc)} >= {t}"
    if kind == "quota_exhausted":
        return f"100 * yitong_vc_used{_sel(vc)} / (yitong_vc_quota{_sel(vc)} > 0) >= {t}"
    if kind == "service_down":
        return "up == 0"
    if kind == "expression":
        return expr.strip()
    raise RuleError(f"unknown rule kind {kind!r}")


def quick_syntax(expr: str) -> str | None:
    """A first look at an admin's PromQL (``promtool`` gives the real verdict where installed):
    the problem as a sentence, or None."""
    if len(expr) > 2000:
        return "the expression is longer than 2000 characters"
    if any(ord(c) < 32 and c not in "\t\n" for c in expr):
        return "the expression holds control characters"
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    quote = ""
    for c in expr:
        if quote:
            if c == quote:
                quote = ""
            continue
        if c in "\"'`":
            quote = c
        elif c in "([{":
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return f"unbalanced {c!r} in the expression"
    if quote or stack:
        return "the expression has an unclosed bracket or quote"
    return None
