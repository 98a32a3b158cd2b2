"""Profiles as zero-to-jupyterhub and KubeSpawner users write them (``singleuser.profileList``,
``c.KubeSpawner.profile_list``) -> Yitong profiles, so that every VC quota check applies to them.

An entry (``display_name``, ``description``, ``slug``, ``default``, ``kubespawner_override``,
``profile_options``) becomes one Yitong profile per combination of its options' choices, named
``<slug>`` or ``<slug>-<choice>[-<choice>...]`` (``slug`` defaults to the slugified display name,
as KubeSpawner does); an ``unlisted_choice`` that is enabled adds the choice ``custom`` (the person
types the value at spawn; the hub checks it against ``validation_regex``). What the platform
reserves comes from the merged ``kubespawner_override`` (the entry's, then each choice's):

| override | Yitong profile |
|---|---|
| ``image`` | ``image`` |
| ``cpu_limit`` (else ``cpu_guarantee``) | ``cpu`` (the platform reserves the limit) |
| ``mem_limit`` (else ``mem_guarantee``; ``K``/``M``/``G``/``T`` are powers of 1024, as in JupyterHub) | ``memory`` |
| ``extra_resource_limits`` (else ``_guarantees``) with a ``vendor/device`` key | ``accelerator`` |
| ``node_selector["kubernetes.io/arch"]`` | ``arch`` |

Every other key (volumes, lifecycle hooks, environment, tolerations, ...) is the hub's to apply on
Kubernetes (``yitong_spawner.profile_list``, the same expansion); an unlisted choice may not change what is
reserved. An entry may name the VCs that offer it (``vcs: [vision]``, a Yitong addition); a VC's
``profiles`` may also name an entry's slug, which offers every profile the entry became.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any

ENTRY_KEYS = {"display_name", "description", "slug", "default", "kubespawner_override", "profile_options", "vcs"}
RESERVED_KEYS = {
    "cpu_limit",
    "cpu_guarantee",
    "mem_limit",
    "mem_guarantee",
    "extra_resource_limits",
    "extra_resource_guarantees",
}
MAX_COMBINATIONS = 64
BYTES_RE = re.compile(r"^\s*([0-9.]+)\s*([KMGT]?)\s*$")


def is_z2jh(entry: Any) -> bool:
    """A profile written the z2jh way (rather than Yitong's own ``cpu``/``memory``/``accelerator``)."""
    return isinstance(entry, dict) and bool(set(entry) & {"kubespawner_override", "profile_options", "slug", "default"})


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def _name(base: str, choices: tuple[str, ...]) -> str:
    name = "-".join([base, *(slugify(c) for c in choices)])
    if len(name) <= 32:
        return name
    digest = hashlib.blake2s(name.encode(), digest_size=4).hexdigest()
    return f"{base[:23].rstrip('-')}-{digest}"


def _memory(value: Any) -> Any:
    """JupyterHub's ByteSpecification (``1G`` = 1024**3) -> a Kubernetes quantity."""
    if isinstance(value, str) and (m := BYTES_RE.match(value)) and m.group(2):
        return f"{m.group(1)}{m.group(2)}i"
    return value


def _options(entry: dict[str, Any], where: str) -> list[list[tuple[str, str, dict[str, Any]]]]:
    """Per option: its ``(choice key, display name, override)``, ``custom`` last for an unlisted choice."""
    out = []
    options = entry.get("profile_options") or {}
    if not isinstance(options, dict):
        raise ValueError(f"{where}.profile_options: a map of option name to {{display_name, choices}}")
    for opt, spec in options.items():
        spec = spec or {}
        choices = [
            (k, (c or {}).get("display_name") or k, (c or {}).get("kubespawner_override") or {})
            for k, c in (spec.get("choices") or {}).items()
        ]
        # the default choice first, as KubeSpawner preselects it
        choices.sort(key=lambda c: not ((spec.get("choices") or {}).get(c[0]) or {}).get("default", False))
        unlisted = spec.get("unlisted_choice") or {}
        if unlisted.get("enabled"):
            override = unlisted.get("kubespawner_override") or {}
            if touched := sorted(set(override) & (RESERVED_KEYS | {"node_selector"})):
                raise ValueError(
                    f"{where}.profile_options.{opt}.unlisted_choice: may not change {', '.join(touched)} "
                    "(what the platform reserves is fixed before the person types a value)"
                )
            choices.append(("custom", unlisted.get("display_name") or "Other", {}))
        if not choices:
            raise ValueError(f"{where}.profile_options.{opt}: no choices and no enabled unlisted_choice")
        out.append(choices)
    return out


def _spec(entry: dict[str, Any], override: dict[str, Any], labels: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "display_name": " · ".join([str(entry.get("display_name") or ""), *labels]).strip(" ·"),
        "description": str(entry.get("description") or ""),
        "image": str(override.get("image") or ""),
    }
    cpu = override.get("cpu_limit", override.get("cpu_guarantee"))
    if cpu is not None:
        spec["cpu"] = cpu
    memory = override.get("mem_limit", override.get("mem_guarantee"))
    if memory is not None:
        spec["memory"] = _memory(memory)
    extra = override.get("extra_resource_limits") or override.get("extra_resource_guarantees") or {}
    devices = {k: v for k, v in extra.items() if "/" in k and int(v) > 0}
    if len(devices) > 1:
        raise ValueError(f"one accelerator type per profile, got {', '.join(devices)}")
    for kind, count in devices.items():
        spec["accelerator"] = {"type": kind, "count": int(count)}
    arch = (override.get("node_selector") or {}).get("kubernetes.io/arch")
    if arch:
        spec["arch"] = arch
    return spec


def expand_entry(entry: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """``{yitong profile name: ProfileSpec fields}`` of one z2jh entry."""
    if unknown := sorted(set(entry) - ENTRY_KEYS):
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    base = str(entry.get("slug") or slugify(entry.get("display_name") or ""))
    if not base:
        raise ValueError(f"{where}: needs a slug or a display_name")
    options = _options(entry, where)
    combos = list(itertools.product(*options))
    if len(combos) > MAX_COMBINATIONS:
        raise ValueError(f"{where}.profile_options: {len(combos)} combinations of choices; at most {MAX_COMBINATIONS}")
    out = {}
    for combo in combos:
        override = dict(entry.get("kubespawner_override") or {})
        for _key, _label, extra in combo:
            override.update(extra)
        name = _name(base, tuple(c[0] for c in combo))
        try:
            out[name] = _spec(entry, override, [c[1] for c in combo])
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}.kubespawner_override: {e}") from None
    return out


def expand_profiles(value: Any) -> tuple[dict[str, Any], dict[str, list[str]], dict[str, list[str]]]:
    """Settings ``profiles`` (a map, a z2jh list, or a map with z2jh entries) ->
    ``(profiles by name, entry slug -> its profile names, VC -> profile names the entries name)``."""
    if isinstance(value, list):
        items = [(f"profiles[{i}]", None, e) for i, e in enumerate(value)]
    elif isinstance(value, dict):
        items = [(f"profiles.{k}", k, e) for k, e in value.items()]
    else:
        return value, {}, {}
    profiles: dict[str, Any] = {}
    groups: dict[str, list[str]] = {}
    offered: dict[str, list[str]] = {}
    for where, key, entry in items:
        if key is None and not isinstance(entry, dict):
            raise ValueError(f"{where}: each entry is a map (display_name, kubespawner_override, ...)")
        if key is not None and not is_z2jh(entry):
            profiles[key] = entry  # a Yitong profile, validated as such
            continue
        if key is not None and not entry.get("slug"):
            entry = {**entry, "slug": key}
        expanded = expand_entry(entry, where)
        if dup := sorted(set(expanded) & set(profiles)):
            raise ValueError(f"{where}: profile {dup[0]} is defined twice")
        profiles.update(expanded)
        slug = str(entry.get("slug") or slugify(entry.get("display_name") or ""))
        groups[slug] = list(expanded)
        for vc in entry.get("vcs") or []:
            offered.setdefault(str(vc), []).extend(expanded)
    return profiles, groups, offered
