"""The profile picker: a pure view model from `/spawn-options`, rendered by Jinja2 with autoescape.

Amounts are shown as the platform service words them (`size`, `free_now_text`, `quota_text`,
`reason`): one unit style, defined once (`yitong_services.vcs.quantities.describe`).

VC names, descriptions and profile texts are tenant-supplied: they are only ever inserted as
escaped text or attribute values. HTML hooks for browser tests are listed in templates/picker.html.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import jinja2

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("yitong_spawner", "templates"),
    autoescape=True,  # never turn this off: descriptions come from tenants
    trim_blocks=True,
    lstrip_blocks=True,
)


def picker_model(
    spawn_options: Mapping[str, Any], selected: Mapping[str, Any] | None = None, custom: Collection[str] = ()
) -> dict[str, Any]:
    """Plain dict the template renders: VCs with their profiles, one radio button checked;
    ``custom``: profiles that take a typed value (a z2jh unlisted choice), shown with a text field."""
    selected = selected or {}
    wanted = f"{selected.get('vc', '')}/{selected.get('profile', '')}"
    groups = []
    for vc in spawn_options.get("vcs") or []:
        rows = []
        for p in vc.get("profiles") or []:
            available = bool(p.get("available", True))
            rows.append(
                {
                    "vc": vc.get("name", ""),
                    "name": p.get("name", ""),
                    "value": f"{vc.get('name', '')}/{p.get('name', '')}",
                    "display_name": p.get("display_name") or p.get("name", ""),
                    "description": p.get("description") or "",
                    "image": p.get("image") or "-",
                    "kernel": p.get("kernel") or "-",
                    "size": p.get("size") or "-",
                    "arch": p.get("arch") or "any",
                    "available": available,
                    "reason": "" if available else (p.get("reason") or "not available"),
                    "checked": False,
                    "custom": p.get("name", "") in custom,
                }
            )
        groups.append(
            {
                "name": vc.get("name", ""),
                "description": vc.get("description") or "",
                "free": vc.get("free_now_text") or "-",
                "quota": vc.get("quota_text") or "-",
                "profiles": rows,
            }
        )
    rows = [r for g in groups for r in g["profiles"] if r["available"]]
    chosen = next((r for r in rows if r["value"] == wanted), rows[0] if rows else None)
    if chosen:
        chosen["checked"] = True
    return {
        "user": spawn_options.get("user", ""),
        "vcs": groups,
        "any_available": bool(rows),
        "any_custom": any(r["custom"] for r in rows),
        "custom_value": str((selected or {}).get("custom") or ""),
    }


def render_picker(model: Mapping[str, Any] | None = None, error: str = "") -> str:
    """HTML snippet for JupyterHub's spawn page (the hub supplies <form> and the submit button)."""
    return _env.get_template("picker.html").render(model=model or {"vcs": []}, error=error)
