"""The cluster dashboard's model, built from plain values (pure: tested against dict literals).

A node is a dict ``{name, source, reported: epoch seconds | None, allocatable, allocated, used,
services: [{name, ok, detail}]}``; ``used`` holds ``None`` for what this node cannot measure
(an accelerator without NVML). Its *heat* is the largest used/allocatable ratio among what is
measured, its *anomalies* the sentences the page shows in red.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from ..vcs.quantities import approx_amount, human_amount


def heat(allocatable: Mapping[str, float], used: Mapping[str, float | None]) -> float:
    """``heat({"cpu": 4, "memory": 8}, {"cpu": 1, "memory": 6}) == 0.75``; 0 when nothing is measured."""
    ratios = [
        min(1.0, float(used[r]) / float(total))  # type: ignore[arg-type]
        for r, total in allocatable.items()
        if total and used.get(r) is not None
    ]
    return round(max(ratios, default=0.0), 3)


def anomalies(node: Mapping[str, Any], now: float, stale: float) -> list[str]:
    """The sentences the dashboard shows in red for one node."""
    reported = node.get("reported")
    late = [f"no report for {round(now - reported)} s"] if reported is not None and now - reported > stale else []
    return late + _lasting(node)


def _lasting(node: Mapping[str, Any]) -> list[str]:
    """The anomalies that last as long as the report does (not its age)."""
    out = []
    for svc in node.get("services") or ():
        if not svc["ok"]:
            out.append(f"{svc['name']} is down" + (f": {svc['detail']}" if svc.get("detail") else ""))
    for r, total in (node.get("allocatable") or {}).items():
        held = (node.get("allocated") or {}).get(r, 0)
        if r not in ("cpu", "memory") and held > total:  # devices cannot be over-committed
            out.append(f"{human_amount(r, held)} of {human_amount(r, total)} {r} allocated")
    return out


def _static_view(node: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": node["name"],
        "source": node.get("source", "agent"),
        "age": None,
        "allocatable": dict(node.get("allocatable") or {}),
        "allocated": dict(node.get("allocated") or {}),
        "used": dict(node.get("used") or {}),
        "heat": heat(node.get("allocatable") or {}, node.get("used") or {}),
        "shown": shown(node),
        "services": list(node.get("services") or ()),
        "anomalies": _lasting(node),
    }


def node_view(
    node: Mapping[str, Any], now: float, stale: float, cache: dict[Any, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One node's row. ``cache`` keeps the parts a report fixes (amounts, heat, services) per
    (node, report time), so an unchanged report is not formatted again on every call."""
    reported = node.get("reported")
    key = (node["name"], reported)
    base = cache.get(key) if cache is not None and reported is not None else None
    if base is None:
        base = _static_view(node)
        if cache is not None and reported is not None:
            cache[key] = base
    view = dict(base)
    if reported is not None:
        view["age"] = round(now - reported, 1)
        if now - reported > stale:
            view["anomalies"] = [f"no report for {round(now - reported)} s", *base["anomalies"]]
    return view


@lru_cache(maxsize=4096)
def _human(resource: str, amount: float | int) -> str:
    return approx_amount(resource, amount)


def shown(node: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Per resource, the amounts as people read them (``vcs.quantities``, the one formatter):
    ``{"memory": {"allocatable": "16Gi", "allocated": "4Gi", "used": "-"}}``; ``-`` is unmeasured
    (nothing allocated is 0)."""
    parts = ("allocatable", "allocated", "used")
    names = {r for part in parts for r in (node.get(part) or {})}
    out = {}
    for r in ["cpu", "memory"] + sorted(names - {"cpu", "memory"}):
        if r not in names:
            continue
        values = {}
        for part in parts:
            amount = (node.get(part) or {}).get(r, None if part == "used" else 0)
            values[part] = "-" if amount is None else _human(r, amount)
        out[r] = values
    return out


def totals(nodes: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float | int]]:
    """Sums over nodes of allocatable, allocated and used (unmeasured amounts left out)."""
    out: dict[str, dict[str, float | int]] = {"allocatable": {}, "allocated": {}, "used": {}}
    for node in nodes:
        for part, sums in out.items():
            for r, amount in (node.get(part) or {}).items():
                if amount is not None:
                    sums[r] = round(sums.get(r, 0) + amount, 3)
    return out


def build(
    *,
    backend: str,
    nodes: Iterable[Mapping[str, Any]],
    vcs: Iterable[Mapping[str, Any]],
    queued: Mapping[str, int],
    jobs: Mapping[str, int],
    history: Iterable[Mapping[str, Any]] = (),
    now: float,
    stale: float,
    cache: dict[Any, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``GET /dashboard`` answer: nodes worst first (anomalies, then heat), VCs with their
    queue, jobs by state."""
    views = [node_view(n, now, stale, cache) for n in nodes]
    views.sort(key=lambda n: (not n["anomalies"], -n["heat"], n["name"]))
    return {
        "generated": datetime.fromtimestamp(now, UTC).isoformat(),
        "backend": backend,
        "nodes": views,
        "totals": totals(views),
        "anomalies": sum(1 for n in views if n["anomalies"]),
        "vcs": [
            {
                "name": v["name"],
                "quota": v["quota"],
                "used": v["used"],
                "queued": int(queued.get(v["name"], 0)),
                "shown": {r: f"{_human(r, v['used'].get(r, 0))} of {_human(r, q)}" for r, q in v["quota"].items()},
            }
            for v in vcs
        ],
        "jobs": dict(jobs),
        "queued": int(sum(queued.values())),
        "history": list(history),
    }
