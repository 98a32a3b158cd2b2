"""Commands OpenPAI runs around a task's own: prerequisites, deployments and the cmd runtime plugin.

- ``prerequisites`` of type ``data``/``script``/``output`` that a task role lists in its own
  ``prerequisites`` run their ``callbacks`` (``taskStarts`` before the role's commands,
  ``taskSucceeds`` after them when they succeeded), as OpenPAI's cmd plugin does;
- ``deployments``: the one ``defaults.deployment`` names adds each role's ``preCommands`` before
  and ``postCommands`` after its commands (after them whatever their exit status; the task's status
  stays the commands');
- ``extras.com.microsoft.pai.runtimeplugin`` entries ``plugin: cmd`` add their callbacks to every
  role, or to those its ``taskroles`` lists.

A prerequisite with only a ``uri`` has nothing to run (OpenPAI's own runtime does not fetch it):
the note says to use a Yitong dataset. Everything else is named in a note, never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .common import ImportRefused

CMD_PLUGINS = ("cmd", "com.microsoft.pai.runtimeplugin.cmd")
EVENTS = {"taskStarts": "pre", "taskSucceeds": "succeeded"}


@dataclass
class Hooks:
    pre: list[str] = field(default_factory=list)
    post: list[str] = field(default_factory=list)  # whatever the commands' status
    succeeded: list[str] = field(default_factory=list)  # only when the commands succeeded


def _commands(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(c, (str, int, float)) for c in value):
        raise ImportRefused(f"{where}: a list of commands is required")
    return [str(c) for c in value]


def _callbacks(callbacks: Any, where: str, hooks: Hooks, notes: list[str]) -> None:
    if not isinstance(callbacks, list):
        raise ImportRefused(f"{where}.callbacks: a list of {{event, commands}} is required")
    for i, cb in enumerate(callbacks):
        event = cb.get("event") if isinstance(cb, dict) else None
        if event not in EVENTS:
            notes.append(
                f"{where}.callbacks[{i}]: event {event!r} has no counterpart (taskStarts, taskSucceeds); not run"
            )
            continue
        getattr(hooks, EVENTS[event]).extend(_commands(cb.get("commands"), f"{where}.callbacks[{i}].commands"))


def role_hooks(doc: dict[str, Any], roles: dict[str, dict[str, Any]], notes: list[str]) -> dict[str, Hooks]:
    out = {name: Hooks() for name in roles}
    prereqs = {p.get("name"): (i, p) for i, p in enumerate(doc.get("prerequisites") or []) if isinstance(p, dict)}
    used: set[str] = set()
    # data/script/output: the role reads the prerequisite's uri through <% $data.uri %> (etc.)
    read = {role.get(k) for role in roles.values() for k in ("data", "script", "output")} - {None}
    for name, role in roles.items():  # OpenPAI order: prerequisites, then the plugins, then preCommands
        for ref in role.get("prerequisites") or []:
            if ref not in prereqs or prereqs[ref][1].get("type") == "dockerimage":
                raise ImportRefused(
                    f"taskRoles.{name}.prerequisites: {ref!r} is not a data, script or output prerequisite"
                )
            i, pre = prereqs[ref]
            used.add(ref)
            if pre.get("callbacks") is not None:
                _callbacks(pre["callbacks"], f"prerequisites[{i}]", out[name], notes)
    for ref, (i, pre) in prereqs.items():
        if pre.get("type") == "dockerimage":
            continue
        what = f"prerequisites[{i}] ({pre.get('type')} {ref!r})"
        if ref in read and (ref not in used or pre.get("callbacks") is None):
            continue  # its uri reaches the commands through a template; the commands' notes say the rest
        if ref not in used:
            notes.append(f"{what}: no task role lists it, so OpenPAI would not run it either; not run")
        elif pre.get("callbacks") is None:
            notes.append(f"{what}: only a uri, nothing to run (it is not fetched); use a Yitong dataset in inputs")
    _plugins(doc, roles, out, notes)
    _deployment(doc, roles, out, notes)
    return out


def _plugins(doc: dict[str, Any], roles: dict[str, Any], out: dict[str, Hooks], notes: list[str]) -> None:
    plugins = (doc.get("extras") or {}).get("com.microsoft.pai.runtimeplugin") or []
    if not isinstance(plugins, list):
        raise ImportRefused("extras.com.microsoft.pai.runtimeplugin: a list of plugins is required")
    for i, plugin in enumerate(plugins):
        where = f"extras.com.microsoft.pai.runtimeplugin[{i}]"
        kind = plugin.get("plugin") if isinstance(plugin, dict) else None
        if kind not in CMD_PLUGINS:
            notes.append(f"{where} ({kind}): no counterpart, ignored")
            continue
        targets = plugin.get("taskroles") or list(roles)
        if unknown := [t for t in targets if t not in roles]:
            raise ImportRefused(f"{where}.taskroles: {unknown[0]!r} is not a task role")
        for name in targets:
            _callbacks((plugin.get("parameters") or {}).get("callbacks") or [], f"{where}.parameters", out[name], notes)


def _deployment(doc: dict[str, Any], roles: dict[str, Any], out: dict[str, Hooks], notes: list[str]) -> None:
    deployments = doc.get("deployments") or []
    if not isinstance(deployments, list):
        raise ImportRefused("deployments: a list of {name, taskRoles} is required")
    chosen = (doc.get("defaults") or {}).get("deployment")
    names = [d.get("name") for d in deployments if isinstance(d, dict)]
    if chosen is not None and chosen not in names:
        raise ImportRefused(f"defaults.deployment: {chosen!r} is not one of deployments ({', '.join(map(str, names))})")
    for d in deployments:
        if not isinstance(d, dict):
            continue
        if d.get("name") != chosen:
            notes.append(f"deployments.{d.get('name')}: not chosen by defaults.deployment, not run (as in OpenPAI)")
            continue
        for name, hooks in (d.get("taskRoles") or {}).items():
            if name not in roles:
                raise ImportRefused(f"deployments.{chosen}.taskRoles: {name!r} is not a task role")
            where = f"deployments.{chosen}.taskRoles.{name}"
            out[name].pre.extend(_commands(hooks.get("preCommands"), f"{where}.preCommands"))
            out[name].post.extend(_commands(hooks.get("postCommands"), f"{where}.postCommands"))
