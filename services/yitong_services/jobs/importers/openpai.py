"""OpenPAI job protocol v2 -> Yitong job (mapping table in docs/jobs-spec.md).

One task role becomes ``nodes = instances``. Two roles become one job when they share the
image and ``resourcePerInstance`` and the first (``master``/``chief``/``head``/``launcher``) has
one instance: node 0 runs the head role's commands, the others the second role's. Anything else
(e.g. TensorFlow ps + worker with different resources) is refused. ``<% $parameters.x %>`` is
substituted; OpenPAI runtime variables (``$PAI_TASK_INDEX``, ``$PAI_HOST_IP_<role>_0``, ...) are
rewritten to Yitong's (``$YITONG_NODE_RANK``, ``$YITONG_MASTER_ADDR``, ...).
"""

from __future__ import annotations

import re
from typing import Any

from ..spec import JobSpec, spec_from_dict
from ..spec_errors import JobSpecError
from .common import ImportRefused

HEAD_ROLES = ("master", "chief", "head", "launcher")
TEMPLATE_RE = re.compile(r"<%\s*\$([A-Za-z_]+)((?:\.[A-Za-z0-9_\-.~]+)*)\s*%>")
PAI_VAR_RE = re.compile(r"\$(?:\{(PAI_\w+)\}|(PAI_\w+))")
ARITH_RE = re.compile(r"\$\(\((.*?)\)\)")
INDEX_WORD_RE = re.compile(r"(?<![$\w])(PAI_TASK_INDEX|PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX)\b")
TOP_MAPPED = {
    "protocolVersion",
    "name",
    "type",
    "prerequisites",
    "taskRoles",
    "defaults",
    "jobRetryCount",
    "parameters",
}
ROLE_MAPPED = {"instances", "dockerImage", "resourcePerInstance", "commands"}


def yitong_name(name: str) -> str:
    out = re.sub(r"[^a-z0-9-]+", "-", str(name).lower()).strip("-")[:32].strip("-")
    return out or "imported"


def _top_notes(key: str, value: Any) -> list[str]:
    if key == "secrets":
        return ["secrets: not imported (secrets never enter a job spec); pass them as environment variables"]
    if key == "extras" and isinstance(value, dict) and value:
        return [f"extras.{k}: no counterpart, ignored" for k in value]
    return [f"{key}: no counterpart, ignored"]


def _params(doc: dict[str, Any], text: str, where: str) -> str:
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
        raise ImportRefused(f"{where}: {m.group(0)} cannot be resolved (only $parameters are supported)")

    return TEMPLATE_RE.sub(sub, text)


def _pai_vars(
    text: str, roles: dict[str, dict[str, Any]], head: str, rank_expr: str, notes: list[str], where: str
) -> str:
    counts = {r: int(spec.get("instances", 1)) for r, spec in roles.items()}

    def sub(m: re.Match[str]) -> str:
        var = m.group(1) or m.group(2)
        if var in ("PAI_TASK_INDEX", "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"):
            return rank_expr
        if var == f"PAI_HOST_IP_{head}_0":
            return "$YITONG_MASTER_ADDR"
        if var.startswith(f"PAI_PORT_LIST_{head}_0_") or re.fullmatch(rf"PAI_{re.escape(head)}_0_\w+_PORT", var):
            return "$YITONG_MASTER_PORT"
        if var.startswith("PAI_TASK_ROLE_TASK_COUNT_") and var.removeprefix("PAI_TASK_ROLE_TASK_COUNT_") in counts:
            return str(counts[var.removeprefix("PAI_TASK_ROLE_TASK_COUNT_")])
        if var == "PAI_JOB_NAME":
            return "$YITONG_JOB_NAME"
        note = f"{where}: ${var} has no counterpart and will be empty"
        if note not in notes:
            notes.append(note)
        return m.group(0)

    def arith(m: re.Match[str]) -> str:  # bare names inside $(( ... ))
        bare = {"$YITONG_NODE_RANK": "YITONG_NODE_RANK"}.get(rank_expr, f"({rank_expr.strip('$()')})")
        return INDEX_WORD_RE.sub(bare, m.group(0))

    return PAI_VAR_RE.sub(sub, ARITH_RE.sub(arith, text))


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
    for i, pre in enumerate(doc.get("prerequisites") or []):
        if isinstance(pre, dict) and pre.get("type") != "dockerimage":
            notes.append(
                f"prerequisites[{i}] ({pre.get('type')} {pre.get('name')!r}): no counterpart, ignored; "
                "use a Yitong dataset in inputs"
            )
    names = list(roles)
    if len(names) == 1:
        head, order = names[0], names
    elif len(names) == 2 and names[0] in HEAD_ROLES and int(roles[names[0]].get("instances", 1)) == 1:
        head, order = names[0], names
    else:
        raise ImportRefused(
            f"taskRoles: {', '.join(names)} cannot be one Yitong job; only a single role or a "
            f"{'/'.join(HEAD_ROLES)} role with one instance plus one worker role can be imported"
        )
    first = roles[head]
    for name in order:
        role, where = roles[name], f"taskRoles.{name}"
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
    res = first.get("resourcePerInstance")
    if not isinstance(res, dict):
        raise ImportRefused(f"taskRoles.{head}.resourcePerInstance: required (cpu, memoryMB, gpu)")
    if res.get("ports"):
        notes.append(
            f"taskRoles.{head}.resourcePerInstance.ports: no counterpart; the rendezvous port is $YITONG_MASTER_PORT"
        )

    def script(name: str, rank_expr: str) -> str:
        where = f"taskRoles.{name}.commands"
        text = "\n".join(str(c) for c in roles[name]["commands"])
        return _pai_vars(_params(doc, text, where), roles, head, rank_expr, notes, where)

    if len(order) == 1:
        command = script(head, "$YITONG_NODE_RANK")
    else:
        command = (
            f'if [ "$YITONG_NODE_RANK" = 0 ]; then\n{script(head, "0")}\nelse\n'
            f"{script(order[1], '$((YITONG_NODE_RANK - 1))')}\nfi"
        )
    spec: dict[str, Any] = {
        "name": yitong_name(doc.get("name", "")),
        "vc": vc or (doc.get("defaults") or {}).get("virtualCluster"),
        "environment": {"image": _image(doc, first.get("dockerImage"), f"taskRoles.{head}", notes)},
        "command": command,
        "framework": "plain",
        "nodes": sum(int(roles[n].get("instances", 1)) for n in order),
        "procs_per_node": 1,  # the commands start their own launcher, once per node
        "cpu": res.get("cpu", 1),
        "memory": f"{int(res.get('memoryMB', 2048))}Mi",
        "retries": int(doc.get("jobRetryCount") or 0),
    }
    if spec["name"] != doc.get("name"):
        notes.append(f"name: {doc.get('name')!r} became {spec['name']!r} (Yitong names are DNS labels)")
    if int(res.get("gpu") or 0) > 0:
        spec["accelerator"] = {"type": gpu_type, "count": int(res["gpu"])}
    for k in ("defaults",):
        notes += [f"defaults.{d}: no counterpart, ignored" for d in (doc.get(k) or {}) if d != "virtualCluster"]
    try:
        return spec_from_dict(spec), notes
    except JobSpecError as e:
        raise ImportRefused(f"the imported job is not valid: {e}") from None
