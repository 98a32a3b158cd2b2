"""The admin console's page models (pure: values in, the templates' values out).

The pages extend JupyterHub's own ``page.html`` (its nav bar, styles and scripts, from the
hub's static files), so the console looks and navigates like the hub. Amounts are shown and
edited in the one notation of ``vcs.quantities`` (``16Gi``, ``500m``); the API parses them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..vcs.quantities import approx_amount, format_amount, human_amount

PAGES = (("console", "VCs and profiles"), ("people", "People"), ("dashboard", "Dashboard"), ("logs", "Logs"))


def nav(prefix: str, active: str) -> list[dict[str, Any]]:
    """The console's items in the hub's nav bar."""
    return [
        {
            "key": key,
            "label": label,
            "href": f"{prefix}console" + ("" if key == "console" else f"/{key}"),
            "active": key == active,
        }
        for key, label in PAGES
    ]


def js_string(value: str) -> str:
    """A JSON string body safe inside an HTML ``<script>`` (the hub's page writes the user name
    into one with ``| safe``): quotes, backslashes and ``<``, ``>``, ``&`` escaped."""
    return json.dumps(value)[1:-1].replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def hub_page_vars(hub_base: str, user: str) -> dict[str, Any]:
    """What JupyterHub's ``page.html`` needs, pointing at the hub (static files, nav links)."""
    base = "/" + hub_base.strip("/") + "/" if hub_base.strip("/") else "/"
    hub = f"{base}hub/"

    def static_url(path: str, include_version: bool = True) -> str:
        return f"{hub}static/{path}"

    return {
        "base_url": hub,
        "prefix": base,
        "static_url": static_url,
        "user": {"name": user, "json_escaped_name": js_string(user)},
        "parsed_scopes": {"admin-ui"},
        "services": [],
        "logout_url": f"{hub}logout",
        "login_url": f"{hub}login",
        "admin_access": True,
        "no_spawner_check": True,
        "xsrf_token": "",
        "version_hash": "",
        "announcement": None,
        "logo_url": base,
    }


def resource_names(inventory: Mapping[str, Any], devices: Iterable[str], *quotas: Mapping[str, Any]) -> list[str]:
    """The resources a form offers: cpu, memory, then every device known to the cluster or a quota."""
    names = {n for q in (inventory, *quotas) for n in q} | set(devices)
    return ["cpu", "memory"] + sorted(names - {"cpu", "memory"})


def amounts_text(resources: Mapping[str, float | int], names: Iterable[str]) -> dict[str, str]:
    """Form values: ``{"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": ""}`` (empty: not granted)."""
    return {n: format_amount(n, resources[n]) if n in resources else "" for n in names}


def described(resources: Mapping[str, float | int]) -> list[str]:
    """``["4 cpu", "16Gi memory"]``: one entry per resource, for tables."""
    return [f"{approx_amount(r, a)} {r}" for r, a in resources.items()]


def vc_rows(vcs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The VC table: per resource, quota / used / free in human units; ``full`` where none is free."""
    rows = []
    for vc in vcs:
        resources = [
            {
                "name": r,
                "quota": human_amount(r, q),
                "used": approx_amount(r, vc["used"].get(r, 0)),
                "free": approx_amount(r, vc["free"].get(r, 0)),
                "full": vc["free"].get(r, 0) <= 0,
            }
            for r, q in vc["quota"].items()
        ]
        rows.append(
            {
                "name": vc["name"],
                "description": vc["description"],
                "groups": list(vc["groups"]),
                "profiles": list(vc["profiles"]),
                "user_caps": described(vc["user_caps"]),
                "idle": duration(vc["idle_timeout"]) if vc.get("idle_timeout") else "",
                "resources": resources,
            }
        )
    return rows


def vc_form(vc: Mapping[str, Any] | None, names: list[str]) -> dict[str, Any]:
    """The create/edit form's values (``vc`` None: a new VC)."""
    vc = vc or {}
    return {
        "new": not vc,
        "name": vc.get("name", ""),
        "description": vc.get("description", ""),
        "groups": ", ".join(vc.get("groups", [])),
        "profiles": list(vc.get("profiles", [])),
        "quota": amounts_text(vc.get("quota", {}), names),
        "user_caps": amounts_text(vc.get("user_caps", {}), names),
        "idle_minutes": f"{vc['idle_timeout'] / 60:g}" if vc.get("idle_timeout") else "",
        "storage_quota": format_amount("memory", vc["storage_quota"]) if vc.get("storage_quota") is not None else "",
    }


def profile_form(p: Mapping[str, Any] | None) -> dict[str, Any]:
    p = p or {}
    accel = p.get("accelerator") or {}
    return {
        "new": not p,
        "name": p.get("name", ""),
        "display_name": p.get("display_name", ""),
        "description": p.get("description", ""),
        "image": p.get("image", ""),
        "kernel": p.get("kernel", "python3"),
        "cpu": format_amount("cpu", p["cpu"]) if "cpu" in p else "1",
        "memory": format_amount("memory", p["memory"]) if "memory" in p else "2Gi",
        "accelerator_type": accel.get("type", ""),
        "accelerator_count": str(accel.get("count", "")),
        "arch": p.get("arch") or "",
    }


def profile_rows(profiles: Iterable[Mapping[str, Any]], offered: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    rows = []
    for p in profiles:
        accel = p.get("accelerator")
        rows.append(
            {
                "name": p["name"],
                "display_name": p["display_name"],
                "image": p["image"],
                "resources": described({"cpu": p["cpu"], "memory": p["memory"]})
                + ([f"{accel['count']} {accel['type']}"] if accel else []),
                "arch": p.get("arch") or "any",
                "vcs": offered.get(p["name"], []),
            }
        )
    return rows


def people(
    users: Iterable[Mapping[str, Any]],
    allocations: Iterable[Mapping[str, Any]],
    jobs: Iterable[Mapping[str, Any]],
    experiments: Iterable[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Every person with their servers (hub state + the VC and profile of their allocation),
    jobs and experiments, each with its VC; people with nothing are listed too."""
    by_ref = {a["ref"]: a for a in allocations if a["kind"] == "server"}
    out: dict[str, dict[str, Any]] = {}

    def person(name: str) -> dict[str, Any]:
        return out.setdefault(name, {"name": name, "admin": False, "servers": [], "jobs": [], "experiments": []})

    for u in users:
        p = person(u["name"])
        p["admin"] = bool(u.get("admin"))
        for server, model in (u.get("servers") or {}).items():
            alloc = by_ref.get(f"{u['name']}/{server}") or {}
            state = "ready" if model.get("ready") else (model.get("pending") or "stopped")
            p["servers"].append(
                {
                    "name": server or "(default)",
                    "state": state,
                    "vc": alloc.get("vc", ""),
                    "profile": alloc.get("profile", ""),
                    "resources": described(alloc.get("resources", {})),
                    "last_activity": model.get("last_activity") or "",
                }
            )
    for ref, a in by_ref.items():  # an allocation whose server the hub does not list
        p = person(a["user"])
        name = ref.split("/", 1)[1] or "(default)"
        if not any(s["name"] == name for s in p["servers"]):
            p["servers"].append(
                {
                    "name": name,
                    "state": "allocated, not running",
                    "vc": a["vc"],
                    "profile": a["profile"],
                    "resources": described(a["resources"]),
                    "last_activity": "",
                }
            )
    for j in jobs:
        person(j["user"])["jobs"].append({k: j[k] for k in ("id", "name", "vc", "state")})
    for e in experiments:
        person(e["user"])["experiments"].append({k: e[k] for k in ("id", "name", "vc", "state")})
    return [out[n] for n in sorted(out)]


def duration(seconds: int) -> str:
    """``90 -> "1 min 30 s"``, ``3600 -> "1 h"``, ``0 -> "never"``."""
    if not seconds:
        return "never"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size} {unit}")
            seconds %= size
    return " ".join(parts)


def culling_policy(culling: Mapping[str, Any]) -> list[str]:
    """The idle-reclaim policy in sentences (the dashboard's), from the ``culling`` settings with
    ``vcs`` the VCs' current ``idle_timeout`` (the database's, as the per-VC culler reads it)."""
    timeout, vcs = culling.get("timeout") or 0, culling.get("vcs") or {}
    if not timeout and not any(vcs.values()):
        return ["Idle servers are not stopped (set culling.timeout in the settings file)."]
    out = []
    if timeout:
        out.append(f"Servers idle for {duration(timeout)} are stopped.")
    out += [f"VC {vc}: its servers idle for {duration(t)} are stopped." for vc, t in sorted(vcs.items()) if t]
    if culling.get("max_age"):
        out.append(f"Any server older than {duration(culling['max_age'])} is stopped.")
    out.append("A person in several policies meets the shortest.")
    return out


def reclaim_policy(reclaim: Mapping[str, Any]) -> str:
    """The accelerator reclaim's policy in one sentence, from the ``reclaim`` settings."""
    if not reclaim.get("enabled"):
        return "Accelerator reclaim is off (reclaim.enabled in the settings file)."
    measured = (
        "and its accelerator below {:.0%} busy".format(reclaim["busy_threshold"])
        if reclaim.get("require_measurement", True)
        else "(its accelerator's use where measured)"
    )
    return (
        f"A server holding an accelerator, its kernels and terminals idle for {duration(int(reclaim['idle']))} {measured},"
        f" is warned, then stopped {duration(int(reclaim['grace']))} later; a busy kernel is never touched."
    )


MONITORING = (("prometheus", "Prometheus"), ("alertmanager", "Alertmanager"), ("node_exporter", "node exporter"))


def monitoring(status: Mapping[str, Any]) -> dict[str, Any]:
    """The monitoring's line on the console's first page, from ``GET /alerts/status``: each
    daemon's state, and in full what is wrong (a port another process holds: which daemon, which
    port, who holds it, what to set)."""
    parts = [
        {"name": label, "state": status[key]["state"], "bad": status[key]["state"] in ("error", "exited")}
        for key, label in MONITORING
    ]
    errors = [status[key]["detail"] for key, _ in MONITORING if status[key]["state"] == "error"]
    return {"parts": parts, "errors": errors}


def _bytes(amount: int | None) -> str:
    return "" if amount is None else approx_amount("memory", amount)


def storage_rows(vcs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The storage table: per VC, its quota, what counts toward it (store, job outputs) and the
    share used; ``full`` at 100 % (vcs/storage.py)."""
    rows = []
    for vc in vcs:
        use = vc["storage"]
        quota = use["quota"]
        share = round(100 * use["used"] / quota) if quota else None
        rows.append(
            {
                "name": vc["name"],
                "quota": _bytes(quota) if quota is not None else "no limit",
                "store": _bytes(use["store"]),
                "job_outputs": _bytes(use["job_outputs"]),
                "used": _bytes(use["used"]),
                "share": "" if share is None else f"{share}%",
                "full": quota is not None and use["used"] >= quota,
            }
        )
    return rows


def home_rows(homes: Iterable[Mapping[str, Any]], shown: int = 20) -> list[dict[str, Any]]:
    """The largest ``shown`` homes as the storage walk measured them, largest first."""
    ordered = sorted(homes, key=lambda h: (-int(h["bytes"]), h["name"]))[:shown]
    return [{"name": h["name"], "bytes": _bytes(int(h["bytes"])), "files": h["files"]} for h in ordered]


def walk_note(measured: Any, homes: int, jobs: int, interval: float) -> str:
    """One sentence on the storage walk (ops/storage_walk.py): what it last measured, and when."""
    if not interval:
        return "The storage walk is off (storage.usage_interval is 0): homes and job folders are not measured."
    every = f"it runs every {duration(int(interval))}"
    if measured is None:
        return f"No home or job folder has been measured yet; the storage walk {every[3:]}."
    stamp = measured.strftime("%Y-%m-%d %H:%M:%S UTC") if hasattr(measured, "strftime") else str(measured)
    return f"Homes and job folders measured {stamp} ({homes} homes, {jobs} job folders); {every}."
