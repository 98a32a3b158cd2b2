"""The OpenPAI runtime environment, rebuilt from Yitong's for every node of an imported job.

OpenPAI gives each task's container variables that describe the whole job (its roles, their
instance counts, every task's host and ports) and the task itself; programs read them directly
(``os.environ["PAI_HOST_IP_worker_0"]``), not only through ``$PAI_*`` in the command text. An
imported job runs one node per task: node ranks are handed out role by role in the document's
order, and this module writes the bash text that sets OpenPAI's variables from Yitong's
(``YITONG_NODE_RANK``, ``YITONG_HOSTS``, ``YITONG_MASTER_PORT``) before the role's commands run.
It works the same on every backend because every backend sets those.

Ports: a role's ``resourcePerInstance.ports`` (``{portType: count}``) get consecutive numbers from
Yitong's rendezvous port on (the first port type's first port is ``$YITONG_MASTER_PORT``); every
task of the job uses the same numbers (one task per node).

Role names and port types become parts of variable names, so both must be identifiers (the
importer refuses others); nothing from the document is pasted into this text unquoted.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

#: a job may reserve at most this many ports per task
MAX_PORTS = 100


@dataclass(frozen=True)
class Role:
    name: str
    instances: int
    first_rank: int
    resources: dict[str, Any]
    completion: dict[str, Any]
    shm_mb: int = 64


def roles_in_order(roles: dict[str, dict[str, Any]]) -> list[Role]:
    out, rank = [], 0
    for name, role in roles.items():
        n = int(role.get("instances", 1))
        shm = int((role.get("extraContainerOptions") or {}).get("shmMB") or 64)
        res, completion = dict(role.get("resourcePerInstance") or {}), dict(role.get("completion") or {})
        out.append(Role(name, n, rank, res, completion, shm))
        rank += n
    return out


def port_numbers(ports: dict[str, Any]) -> dict[str, list[str]]:
    """``{portType: [port, ...]}`` from ``resourcePerInstance.ports``: shell arithmetic from the
    rendezvous port on (``$YITONG_MASTER_PORT`` first), so every backend's port is the one used."""
    out, nxt = {}, 0
    for kind, count in ports.items():
        n = int(count)
        out[kind] = [f"$((YITONG_MASTER_PORT + {i}))" for i in range(nxt, nxt + n)]
        nxt += n
    return out


def job_lines(job_name: str, roles: list[Role]) -> list[str]:
    """What every node exports before it knows its role."""
    lines = [
        f"export PAI_JOB_NAME={shlex.quote(job_name)}",
        'export PAI_USER_NAME="${PAI_USER_NAME:-${USER:-$(id -un 2>/dev/null)}}"',
        f"export PAI_TASK_ROLE_COUNT={len(roles)}",
        f"export PAI_TASK_ROLE_LIST={','.join(r.name for r in roles)}",
        'IFS=, read -r -a __pai_hosts <<< "${YITONG_HOSTS:-${YITONG_MASTER_ADDR:-127.0.0.1}}"',
    ]
    for r in roles:
        res = r.resources
        mem = int(res.get("memoryMB", 2048))
        cpu = f"{float(res.get('cpu', 1)):g}"
        lines += [
            f"export PAI_TASK_ROLE_TASK_COUNT_{r.name}={r.instances}",
            f"export PAI_RESOURCE_{r.name}={int(res.get('gpu') or 0)},{cpu},{mem},{r.shm_mb}",
            f"export PAI_MIN_FAILED_TASK_COUNT_{r.name}={_count(r.completion.get('minFailedInstances'), 1)}",
            f"export PAI_MIN_SUCCEEDED_TASK_COUNT_{r.name}={_count(r.completion.get('minSucceededInstances'), -1)}",
        ]
        # one loop per role, so the text stays small however many instances there are
        body = [f'export "PAI_HOST_IP_{r.name}_$__i=${{__pai_hosts[$((__i + {r.first_rank}))]:-${{__pai_hosts[0]}}}}"']
        for kind, numbers in port_numbers(dict(res.get("ports") or {})).items():
            body.append(f'export "PAI_PORT_LIST_{r.name}_${{__i}}_{kind}={",".join(numbers)}"')
            if numbers:
                body.append(f'export "PAI_{r.name}_${{__i}}_{kind}_PORT={numbers[0]}"')
        lines += [f"for ((__i = 0; __i < {r.instances}; __i++)); do", *body, "done"]
    return lines


def task_lines(role: Role) -> list[str]:
    """What a node of ``role`` exports: its role and its index in that role."""
    index = "$YITONG_NODE_RANK" if role.first_rank == 0 else f"$((YITONG_NODE_RANK - {role.first_rank}))"
    return [
        f"export PAI_CURRENT_TASK_ROLE_NAME={role.name}",
        f"export PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX={index}",
        "export PAI_TASK_INDEX=$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX",
        "export PAI_CONTAINER_HOST_IP=${__pai_hosts[$YITONG_NODE_RANK]:-127.0.0.1}",
    ]


def _count(value: Any, default: int) -> int:
    return default if value is None else int(value)


#: every variable this module sets, as patterns over the names (for "has no counterpart" notes)
SET_PREFIXES = (
    "PAI_JOB_NAME",
    "PAI_USER_NAME",
    "PAI_TASK_ROLE_COUNT",
    "PAI_TASK_ROLE_LIST",
    "PAI_TASK_ROLE_TASK_COUNT_",
    "PAI_RESOURCE_",
    "PAI_MIN_FAILED_TASK_COUNT_",
    "PAI_MIN_SUCCEEDED_TASK_COUNT_",
    "PAI_HOST_IP_",
    "PAI_PORT_LIST_",
    "PAI_CURRENT_TASK_ROLE_NAME",
    "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX",
    "PAI_TASK_INDEX",
    "PAI_CONTAINER_HOST_IP",
)


def is_set(var: str, roles: list[Role]) -> bool:
    if var.startswith(SET_PREFIXES):
        return True
    return any(var.startswith(f"PAI_{r.name}_") and var.endswith("_PORT") for r in roles)
