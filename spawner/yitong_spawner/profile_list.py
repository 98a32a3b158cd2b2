"""The hub's half of z2jh profile lists: the ``kubespawner_override`` keys the platform does not
reserve (volumes, lifecycle hooks, environment, tolerations, ...), per Yitong profile name.

The platform service expands the same settings entries into profiles
(``yitong_services.vcs.profile_list``, docs/vcs.md) and reserves cpu, memory, devices and the image from
them; this module mirrors its naming (``<slug>`` or ``<slug>-<choice>...``, the default choice
first, ``custom`` for an enabled ``unlisted_choice``; tests/spawner/test_profile_list.py checks both give
the same names) and keeps the rest of each override for KubeSpawner. Pure: settings in, dicts out.

An unlisted choice's value is typed by the person: it must match the entry's
``validation_regex`` in full (no regex: refused), and is put only where the override says
``{value}``, as a plain string (never a template, a shell or a path of the hub's).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import re
from typing import Any

#: what the platform reserves and sets itself; the rest of an override is applied by the hub
RESERVED_KEYS = {
    "image",
    "cpu_limit",
    "cpu_guarantee",
    "mem_limit",
    "mem_guarantee",
    "extra_resource_limits",
    "extra_resource_guarantees",
}
MAX_VALUE = 256


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def _name(base: str, choices: tuple[str, ...]) -> str:
    name = "-".join([base, *(slugify(c) for c in choices)])
    if len(name) <= 32:
        return name
    digest = hashlib.blake2s(name.encode(), digest_size=4).hexdigest()
    return f"{base[:23].rstrip('-')}-{digest}"


def _is_z2jh(entry: Any) -> bool:
    return isinstance(entry, dict) and bool(set(entry) & {"kubespawner_override", "profile_options", "slug", "default"})


def _choices(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """``(key, override, unlisted)`` of one option, in the service's order."""
    given = spec.get("choices") or {}
    out: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = [
        (k, (c or {}).get("kubespawner_override") or {}, None) for k, c in given.items()
    ]
    out.sort(key=lambda c: not (given.get(c[0]) or {}).get("default", False))
    unlisted = spec.get("unlisted_choice") or {}
    if unlisted.get("enabled"):
        out.append(("custom", {}, unlisted))
    return out


def hub_overrides(profiles: Any) -> dict[str, dict[str, Any]]:
    """``{profile name: {"override": {...}, "unlisted": {...} | None}}`` for the settings' ``profiles``."""
    if isinstance(profiles, list):
        items = [(None, e) for e in profiles]
    elif isinstance(profiles, dict):
        items = [(k, e) for k, e in profiles.items() if _is_z2jh(e)]
    else:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for key, entry in items:
        if not isinstance(entry, dict):
            continue
        base = str(entry.get("slug") or key or slugify(entry.get("display_name") or ""))
        options = [_choices(spec or {}) for spec in (entry.get("profile_options") or {}).values()]
        for combo in itertools.product(*options):
            override = copy.deepcopy(entry.get("kubespawner_override") or {})
            unlisted = None
            for _key, extra, free in combo:
                override.update(copy.deepcopy(extra))
                if free is not None:
                    unlisted = {
                        "regex": free.get("validation_regex"),
                        "message": free.get("validation_message") or "",
                        "override": copy.deepcopy(free.get("kubespawner_override") or {}),
                    }
            kept = {k: v for k, v in override.items() if k not in RESERVED_KEYS}
            if kept or unlisted:
                out[_name(base, tuple(c[0] for c in combo))] = {"override": kept, "unlisted": unlisted}
    return out


def check_custom(entry: dict[str, Any] | None, value: Any) -> str | None:
    """The person's value for an unlisted choice, checked; ``None`` when the profile has none.
    Raises ``ValueError`` with a sentence for the person."""
    unlisted = (entry or {}).get("unlisted")
    if unlisted is None:
        if value:
            raise ValueError("This profile takes no custom value.")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError("This profile needs a custom value (the field under the profiles).")
    value = value.strip()
    pattern = unlisted.get("regex")
    if len(value) > MAX_VALUE or any(ord(ch) < 32 for ch in value):
        raise ValueError(f"The custom value must be one line of at most {MAX_VALUE} characters.")
    if not pattern or not re.fullmatch(pattern, value):
        raise ValueError(unlisted.get("message") or f"The custom value must match {pattern!r}.")
    return value


def _fill(value: Any, custom: str) -> Any:
    if isinstance(value, str):
        return value.replace("{value}", custom)
    if isinstance(value, list):
        return [_fill(v, custom) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, custom) for k, v in value.items()}
    return value


def kube_extra(entry: dict[str, Any] | None, custom: str | None) -> dict[str, Any]:
    """The KubeSpawner traits this profile adds, with the custom value filled in (a fresh copy)."""
    if not entry:
        return {}
    out = copy.deepcopy(entry.get("override") or {})
    if entry.get("unlisted") and custom is not None:
        out.update(_fill(copy.deepcopy(entry["unlisted"]["override"]), custom))
    return out
