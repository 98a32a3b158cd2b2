"""Text tables and JSON for the ``yt`` commands (pure string builders plus one printer)."""

from __future__ import annotations

import json as _json
import sys
from dataclasses import dataclass
from typing import Any

from yitong_lab.units import format_amount, format_resources, format_time

_FIRST = ("cpu", "memory")


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned columns separated by two spaces, no trailing blanks."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [headers, *rows]]
    return "\n".join(lines)


def resource_names(*maps: dict[str, Any] | None) -> list[str]:
    """cpu, memory first, then devices in name order."""
    names = {name for m in maps if m for name in m}
    return [n for n in _FIRST if n in names] + sorted(names - set(_FIRST))


def resource_rows(vc: dict[str, Any]) -> list[list[str]]:
    """``[resource, quota, used, free]`` per resource of a VC model, then its storage."""
    quota, used, free = vc.get("quota") or {}, vc.get("used") or {}, vc.get("free") or {}
    return [
        [
            name,
            format_amount(name, quota.get(name)),
            format_amount(name, used.get(name)),
            format_amount(name, free.get(name)),
        ]
        for name in resource_names(quota, used, free)
    ] + storage_rows(vc)


def storage_rows(vc: dict[str, Any]) -> list[list[str]]:
    """``[["storage", quota, used, free]]`` ("no limit" without a quota); none from an older service."""
    storage = vc.get("storage")
    if not storage:
        return []
    limit, used = storage.get("quota"), int(storage.get("used") or 0)
    if limit is None:
        return [["storage", "no limit", format_amount("memory", used), "-"]]
    return [
        [
            "storage",
            format_amount("memory", limit),
            format_amount("memory", used),
            format_amount("memory", max(limit - used, 0)),
        ]
    ]


def vcs_table(vcs: list[dict[str, Any]]) -> str:
    """One block of rows per VC: ``VC RESOURCE QUOTA USED FREE``."""
    rows: list[list[str]] = []
    for vc in vcs:
        resources = resource_rows(vc) or [["-", "-", "-", "-"]]
        for i, row in enumerate(resources):
            rows.append([vc["name"] if i == 0 else "", *row])
    return table(["VC", "RESOURCE", "QUOTA", "USED", "FREE"], rows)


def fields(pairs: list[tuple[str, str]]) -> str:
    """``label:  value`` lines, values aligned."""
    width = max(len(label) for label, _ in pairs) + 1
    return "\n".join(f"{(label + ':').ljust(width)}  {value}".rstrip() for label, value in pairs)


def names(values: list[str] | None) -> str:
    return ", ".join(values) if values else "-"


def vc_details(vc: dict[str, Any]) -> str:
    head = fields(
        [
            ("name", vc["name"]),
            ("description", vc.get("description") or "-"),
            ("groups", names(vc.get("groups"))),
            ("profiles", names(vc.get("profiles"))),
            ("user caps", format_resources(vc.get("user_caps"))),
            *_storage_parts(vc.get("storage")),
        ]
    )
    rows = resource_rows(vc)
    return head + ("\n\n" + table(["RESOURCE", "QUOTA", "USED", "FREE"], rows) if rows else "")


def _storage_parts(storage: dict[str, Any] | None) -> list[tuple[str, str]]:
    """What counts toward the storage quota (``yt vc show``)."""
    if not storage:
        return []
    store, outputs = (
        format_amount("memory", storage.get("store") or 0),
        format_amount("memory", storage.get("job_outputs") or 0),
    )
    measured = storage.get("measured")
    when = f" (measured {format_time(measured)})" if measured else " (not measured yet)"
    return [("storage", f"store {store}, job folders {outputs}{when}")]


def accelerator(profile: dict[str, Any]) -> str:
    acc = profile.get("accelerator")
    return f"{acc.get('type')} x{acc.get('count')}" if acc else "-"


def profiles_table(profiles: list[dict[str, Any]]) -> str:
    rows = [
        [
            p["name"],
            p.get("display_name") or "-",
            format_amount("cpu", p.get("cpu")),
            format_amount("memory", p.get("memory")),
            accelerator(p),
            p.get("arch") or "any",
        ]
        for p in profiles
    ]
    return table(["PROFILE", "DISPLAY NAME", "CPU", "MEMORY", "ACCELERATOR", "ARCH"], rows)


@dataclass
class Output:
    """Where a command prints: ``show(data, text)`` prints JSON or the text rendering.
    ``progress`` is handed to long transfers (see :mod:`yitong_lab.datasets.progress`)."""

    json: bool = False
    progress: Any = "auto"

    def show(self, data: Any, text: str) -> None:
        if self.json:
            print(_json.dumps(data, indent=2, sort_keys=True), file=sys.stdout)
        elif text:
            print(text, file=sys.stdout)

    def note(self, text: str) -> None:
        """A human message (suppressed under --json so stdout stays parseable)."""
        if not self.json:
            print(text, file=sys.stdout)
