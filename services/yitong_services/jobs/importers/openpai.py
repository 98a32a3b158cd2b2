"""OpenPAI job protocol v2 -> Yitong job (mapping table in docs/jobs-spec.md).

Each task of each role becomes a node (``nodes`` = the sum of ``instances``); node ranks are
given role by role in the document's order, and every node runs its role's commands with
OpenPAI's runtime variables set (``openpai_env``), and around them the prerequisites', the cmd
plugin's and the chosen deployment's commands (``openpai_hooks``). The roles must share the image
and ``resourcePerInstance`` (a Yitong job runs one image and one size on every node); other jobs
(e.g. TensorFlow ps + worker of different sizes) are refused. ``<% $parameters.x %>`` is
substituted. An image built for ROCm gets ``amd.com/gpu`` instead of ``nvidia.com/gpu``.
"""

from __future__ import annotations

import re
from typing import Any

from ..spec import JobSpec, spec_from_dict
from ..spec_errors import JobSpecError
from .common import ImportRefused
from .forever import never_ends
from .openpai_env import MAX_PORTS, Role, is_set, job_lines, roles_in_order, task_lines
from .openpai_hooks import Hooks, role_hooks
from .sandbox import command_notes, host_name_notes

TEMPLATE_RE = re.compile(r"<%\s*\$([A-Za-z_]+)((?:\.[A-Za-z0-9_\-~]+|\[\d+\])*)\s*%>")
LEFT_RE = re.compile(r"<%.*?%>")
#: a task role's references to prerequisites that ``<% $data.uri %>`` (etc.) read
REFS = ("data", "script", "output")
PAI_VAR_RE = re.compile(r"\$(?:\{(PAI_\w+)\}|(PAI_\w+))|\b(PAI_\w+)\b")
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
ROCM_RE = re.compile(r"rocm", re.IGNORECASE)
TOP_MAPPED = {
    "protocolVersion",
    "name",
    "type",
    "prerequisites",
    "taskRoles",
    "defaults",
    "jobRetryCount",
    "parameters",
    "deployments",
}
ROLE_MAPPED = {"instances", "dockerImage", "resourcePerInstance", "commands", "prerequisites", *REFS}


def yitong_name(name: str) -> str:
    out = re.sub(r"[^a-z0-9-]+", "-", str(name).lower()).strip("-")[:32].strip("-")
    return out or "imported"


def _top_notes(key: str, value: Any) -> list[str]:
    if key == "secrets":
        return ["secrets: not imported (secrets never enter a job spec); pass them as environment variables"]
    if key == "extras" and isinstance(value, dict) and value:
        return [f"extras.{k}: no counterpart, ignored" for k in value if k != "com.microsoft.pai.runtimeplugin"]
    return [f"{key}: no counterpart, ignored"]


def _prerequisite(doc: dict[str, Any], role: dict[str, Any], kind: str, where: str) -> dict[str, Any]:
    """The prerequisite a role names in ``data``/``script``/``output`` (its ``type`` must match)."""
    ref = role.get(kind)
    if ref is None:
        raise ImportRefused(f"{where}: uses <% ${kind}… %> but the role names no {kind} prerequisite ({kind}: NAME)")
    for pre in doc.get("prerequisites") or []:
        if isinstance(pre, dict) and pre.get("name") == ref and pre.get("type") == kind:
            return pre
    raise ImportRefused(f"{where.rsplit('.', 1)[0]}.{kind}: {ref!r} is not a {kind} prerequisite")


def _lookup(value: Any, path: str, shown: str) -> str:
    """``uri``, ``uri[0]``, ``name`` of a prerequisite, as text (a list of uris: space-separated)."""
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            index = int(part[1:-1])
            if not isinstance(value, list) or index >= len(value):
                raise ImportRefused(f"{shown}: there is no item {index}")
            value = value[index]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise ImportRefused(f"{shown}: the prerequisite has no {part}")
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    if isinstance(value, dict):
        raise ImportRefused(f"{shown}: names a map, not a value")
    return str(value)


def _params(doc: dict[str, Any], text: str, where: str, role: dict[str, Any] | None = None) -> str:
    params = doc.get("parameters") or {}

    def sub(m: re.Match[str]) -> str:
        scope, path = m.group(1), m.group(2).lstrip(".")
        if scope == "parameters" and path in params:
            return str(params[path])
        if scope == "secrets":
            raise ImportRefused(
                f"{where}: uses <% $secrets.{path} %>; secrets are not imported — pass the value "
                "through an environment variable instead"
            )
        if scope in REFS and role is not None:
            return _lookup(_prerequisite(doc, role, scope, where), path, f"{where}: {m.group(0)}")
        raise ImportRefused(
            f"{where}: {m.group(0)} cannot be resolved (only $parameters and the role's $data, $script, $output are)"
        )

    out = TEMPLATE_RE.sub(sub, text)
    if left := LEFT_RE.search(out):
        raise ImportRefused(f"{where}: {left.group(0)} is not a template this importer reads (<% $parameters.NAME %>)")
    return out


def _unset_vars(text: str, roles: list[Role], notes: list[str], where: str) -> None:
    for m in PAI_VAR_RE.finditer(text):
        var = m.group(1) or m.group(2) or m.group(3)
        note = f"{where}: {var} has no counterpart and will be empty"
        if not is_set(var, roles) and note not in notes:
            notes.append(note)


def _image(doc: dict[str, Any], ref: Any, where: str, notes: list[str]) -> str:
    for i, pre in enumerate(doc.get("prerequisites") or []):
        if isinstance(pre, dict) and pre.get("name") == ref and pre.get("type") == "dockerimage":
            if pre.get("auth"):
                notes.append(
                    f"prerequisites[{i}].auth: registry credentials are not imported; "
                    "ask an admin for an image pull secret in the VC"
                )
            if not isinstance(pre.get("uri"), str):
                raise ImportRefused(f"prerequisites[{i}].uri: a docker image needs one uri")
            return pre["uri"]
    raise ImportRefused(f"{where}.dockerImage: {ref!r} is not a dockerimage in prerequisites")


def _check_roles(roles: dict[str, dict[str, Any]], notes: list[str]) -> str:
    """The first role's name, once every role is one Yitong can run beside it."""
    names = list(roles)
    head, first = names[0], roles[names[0]]
    for name, role in roles.items():
        where = f"taskRoles.{name}"
        if not IDENT_RE.match(str(name)):
            raise ImportRefused(f"taskRoles: {name!r} is not a role name (letters, digits and '_')")
        notes += [f"{where}.{k}: no counterpart, ignored" for k in role if k not in ROLE_MAPPED]
        if role.get("dockerImage") != first.get("dockerImage") or role.get("resourcePerInstance") != first.get(
            "resourcePerInstance"
        ):
            raise ImportRefused(
                f"{where}: a different image or resourcePerInstance than {head}; "
                "a Yitong job runs the same image and resources on every node"
            )
        if not isinstance(role.get("commands"), list) or not role["commands"]:
            raise ImportRefused(f"{where}.commands: a list of commands is required")
        if not (isinstance(role.get("instances", 1), int) and 1 <= role.get("instances", 1) <= 1024):
            raise ImportRefused(f"{where}.instances: a whole number from 1 to 1024")
    res = first.get("resourcePerInstance")
    if not isinstance(res, dict):
        raise ImportRefused(f"taskRoles.{head}.resourcePerInstance: required (cpu, memoryMB, gpu)")
    for key, kind in (("cpu", (int, float)), ("memoryMB", int), ("gpu", int)):
        if key in res and (isinstance(res[key], bool) or not isinstance(res[key], kind) or res[key] < 0):
            raise ImportRefused(
                f"taskRoles.{head}.resourcePerInstance.{key}: {res[key]!r} is not a number of at least 0"
            )
    for name, role in roles.items():
        completion = role.get("completion") or {}
        if not isinstance(completion, dict) or not all(
            isinstance(completion.get(k), (int, type(None))) for k in ("minFailedInstances", "minSucceededInstances")
        ):
            raise ImportRefused(
                f"taskRoles.{name}.completion: minFailedInstances and minSucceededInstances are numbers"
            )
    ports = res.get("ports") or {}
    if not isinstance(ports, dict) or not all(IDENT_RE.match(str(k)) for k in ports):
        raise ImportRefused(f"taskRoles.{head}.resourcePerInstance.ports: a map of port names to counts")
    if not all(isinstance(n, int) and n >= 0 for n in ports.values()) or sum(ports.values()) > MAX_PORTS:
        raise ImportRefused(f"taskRoles.{head}.resourcePerInstance.ports: at most {MAX_PORTS} ports per task")
    return head


def _role_script(text: str, hooks: Hooks) -> str:
    """The role's commands in a subshell (an ``exit`` in them still runs the post commands)."""
    lines = [*hooks.pre, "(", text, ")", "__pai_rc=$?"]
    if hooks.succeeded:
        lines += ['if [ "$__pai_rc" = 0 ]; then', *hooks.succeeded, "fi"]
    return "\n".join([*lines, *hooks.post, 'exit "$__pai_rc"'])


def _completion_notes(doc: dict[str, Any], roles: list[Role], texts: dict[str, str], notes: list[str]) -> None:
    deciders = [r.name for r in roles if (r.completion.get("minSucceededInstances") or -1) > 0]
    for r in roles:
        what = never_ends(texts[r.name])
        if what is None:
            continue
        others = [d for d in deciders if d != r.name]
        if others:
            notes.append(
                f"taskRoles.{r.name}.commands: {what} never ends; OpenPAI ends the job when {others[0]} succeeds "
                "(completion.minSucceededInstances), but a Yitong job waits for every node: stop it from "
                f"{others[0]}'s commands or set max_run_time"
            )
        else:
            notes.append(
                f"taskRoles.{r.name}.commands: {what} never ends, and the job's completion waits for it: "
                "the job would run until cancelled or max_run_time"
            )


def import_openpai(
    doc: dict[str, Any], vc: str | None = None, gpu_type: str = "nvidia.com/gpu"
) -> tuple[JobSpec, list[str]]:
    if doc.get("protocolVersion") not in (2, "2"):
        raise ImportRefused("protocolVersion: only OpenPAI protocol version 2 can be imported")
    if doc.get("type", "job") != "job":
        raise ImportRefused(f"type: {doc.get('type')!r} is not a job")
    roles = doc.get("taskRoles")
    if not isinstance(roles, dict) or not roles or not all(isinstance(r, dict) for r in roles.values()):
        raise ImportRefused("taskRoles: a job needs at least one task role")
    notes = [n for k in doc if k not in TOP_MAPPED for n in _top_notes(k, doc[k])]
    if not (vc or (doc.get("defaults") or {}).get("virtualCluster")):
        raise ImportRefused("defaults.virtualCluster: missing; name the Yitong VC to submit to (--vc)")
    head = _check_roles(roles, notes)
    first = roles[head]
    res = first["resourcePerInstance"]
    order = roles_in_order(roles)
    hooks = role_hooks(doc, roles, notes)
    texts = {}
    for r in order:
        for kind in REFS:
            if roles[r.name].get(kind) is not None:
                _prerequisite(doc, roles[r.name], kind, f"taskRoles.{r.name}.{kind}")
        around = hooks[r.name].pre + hooks[r.name].succeeded + hooks[r.name].post
        notes += command_notes(
            _params(doc, "\n".join(around), f"taskRoles.{r.name}", roles[r.name]),
            f"taskRoles.{r.name} (pre/post commands)",
        )
        where = f"taskRoles.{r.name}.commands"
        texts[r.name] = _params(doc, "\n".join(str(c) for c in roles[r.name]["commands"]), where, roles[r.name])
        _unset_vars(texts[r.name], order, notes, where)
        notes += command_notes(texts[r.name], where)
        notes += host_name_notes(texts[r.name], list(roles), {o.name: o.instances for o in order}, where)
    _completion_notes(doc, order, texts, notes)
    lines = job_lines(str(doc.get("name", "")), order)
    for r in order:
        lines += [
            f'if [ "$YITONG_NODE_RANK" -ge {r.first_rank} ] && [ "$YITONG_NODE_RANK" -lt {r.first_rank + r.instances} ]; then'
        ]
        lines += task_lines(r)
        lines += [_params(doc, _role_script(texts[r.name], hooks[r.name]), f"taskRoles.{r.name}", roles[r.name]), "fi"]
    lines.append('echo "node $YITONG_NODE_RANK has no OpenPAI task role" >&2; exit 2')
    image = _image(doc, first.get("dockerImage"), f"taskRoles.{head}", notes)
    spec: dict[str, Any] = {
        "name": yitong_name(doc.get("name", "")),
        "vc": vc or (doc.get("defaults") or {}).get("virtualCluster"),
        "environment": {"image": image},
        "command": "\n".join(lines),
        "framework": "plain",
        "nodes": sum(r.instances for r in order),
        "procs_per_node": 1,  # the commands start their own launcher, once per node
        "cpu": res.get("cpu", 1),
        "memory": f"{int(res.get('memoryMB', 2048))}Mi",
        "retries": int(doc.get("jobRetryCount") or 0),
    }
    if spec["name"] != doc.get("name"):
        notes.append(f"name: {doc.get('name')!r} became {spec['name']!r} (Yitong names are DNS labels)")
    if int(res.get("gpu") or 0) > 0:
        if ROCM_RE.search(image) and gpu_type == "nvidia.com/gpu":
            gpu_type = "amd.com/gpu"
            notes.append(
                f"resourcePerInstance.gpu: {image} is a ROCm image, so its GPUs are amd.com/gpu, not nvidia.com/gpu"
            )
        spec["accelerator"] = {"type": gpu_type, "count": int(res["gpu"])}
    notes += [
        f"defaults.{d}: no counterpart, ignored"
        for d in (doc.get("defaults") or {})
        if d not in ("virtualCluster", "deployment")
    ]
    try:
        return spec_from_dict(spec), notes
    except JobSpecError as e:
        raise ImportRefused(f"the imported job is not valid: {e}") from None
