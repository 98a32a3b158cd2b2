"""The rule kinds (pure): what each measures, its threshold's bounds, and its PromQL expression.

A rule is ``kind`` + ``threshold`` (+ ``vc``); :func:`expression` turns it into the PromQL that
Prometheus evaluates. The metrics are the platform's ``/metrics`` (``yitong_*``, alerts/metrics.py)
and the node exporter's (``node_*``); ``up`` is Prometheus's own.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from string import Template


@dataclass(frozen=True)
class Kind:
    summary: str  # one line, with {threshold:g}
    unit: str  # of the threshold: "%", "jobs", "" (none taken)
    default: float | None
    low: float = 0.0
    high: float = 100.0
    per_vc: bool = True  # may be limited to one VC
    #: the PromQL, a string.Template: $threshold (as %g), $vc (the VC's label selector, or nothing),
    #: $window (a rate's range, at least four scrapes), $node_job (the node exporter's scrape job,
    #: quoted); the Helm chart fills in the same
    #: placeholders (helm/alert_kinds.py writes this table for it)
    promql: str = ""


KINDS: dict[str, Kind] = {
    "node_memory": Kind(
        "node memory in use above {threshold:g}%",
        "%",
        70.0,
        per_vc=False,
        promql="100 * (1 - node_memory_MemAvailable_bytes{job=$node_job} / node_memory_MemTotal_bytes{job=$node_job})"
        " > $threshold",
    ),
    "node_cpu": Kind(
        "node CPU busy above {threshold:g}%",
        "%",
        90.0,
        per_vc=False,
        promql='100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{job=$node_job,mode="idle"}[$window])))'
        " > $threshold",
    ),
    "accelerator_utilization": Kind(
        "accelerator busy above {threshold:g}%",
        "%",
        95.0,
        per_vc=False,
        promql="yitong_accelerator_utilization_percent > $threshold",
    ),
    "accelerator_idle": Kind(
        "accelerator allocated but at most {threshold:g}% busy",
        "%",
        0.0,
        promql="(yitong_accelerator_allocated$vc == 1)"
        " and on (node, index) (yitong_accelerator_utilization_percent <= $threshold)",
    ),
    "job_failed": Kind(
        "at least {threshold:g} job(s) failed recently",
        "jobs",
        1.0,
        low=1.0,
        high=1e6,
        promql="yitong_jobs_failed_recent$vc >= $threshold",
    ),
    "quota_exhausted": Kind(
        "a VC uses at least {threshold:g}% of a quota",
        "%",
        100.0,
        low=1.0,
        promql="100 * yitong_vc_used$vc / (yitong_vc_quota$vc > 0) >= $threshold",
    ),
    "storage_quota": Kind(
        "a VC uses at least {threshold:g}% of its storage quota",
        "%",
        90.0,
        low=1.0,
        promql="100 * sum by (vc) (yitong_vc_storage_used_bytes$vc)"
        " / on (vc) (yitong_vc_storage_quota_bytes$vc > 0) >= $threshold",
    ),
    "disk_full": Kind(
        "a platform disk (data directory and hub database, store, job folders, cache) above {threshold:g}% full",
        "%",
        90.0,
        low=1.0,
        per_vc=False,
        promql="100 * (1 - yitong_disk_avail_bytes / yitong_disk_size_bytes) >= $threshold",
    ),
    "disk_free": Kind(
        "a platform disk (data directory and hub database, store, job folders, cache) with under {threshold:g} GiB free",
        "GiB",
        10.0,
        low=0.01,
        high=1e6,
        per_vc=False,
        promql="yitong_disk_avail_bytes / 1073741824 < $threshold",
    ),
    "service_down": Kind("a monitored service does not answer its scrape", "", None, per_vc=False, promql="up == 0"),
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


def _sel(vc: str | None) -> str:
    """The VC's label selector, its name quoted as a PromQL string (JSON's escapes are PromQL's)."""
    return "" if vc is None else "{vc=" + json.dumps(vc) + "}"


def window(scrape_interval: float) -> str:
    """The range of a rate: four scrapes, at least a minute."""
    return f"{int(max(60, 4 * scrape_interval))}s"


def expression(
    kind: str, threshold: float | None, vc: str | None, expr: str, scrape_interval: float, node_job: str = "node"
) -> str:
    """The PromQL of a checked rule. ``node_job``: the job that scrapes the node exporters ("node" in
    the platform's own prometheus.yml; kube-prometheus-stack's is "node-exporter")."""
    spec = KINDS.get(kind)
    if spec is None:
        raise RuleError(f"unknown rule kind {kind!r}")
    if kind == "expression":
        return expr.strip()
    t = f"{threshold:g}" if threshold is not None else ""
    return Template(spec.promql).substitute(
        threshold=t, vc=_sel(vc), window=window(scrape_interval), node_job=json.dumps(node_job)
    )


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
