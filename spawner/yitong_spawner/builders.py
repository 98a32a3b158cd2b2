"""Pure builders: (VC, profile, allocated resources) -> trait overrides for each backend's spawner.

Where a device goes (node selector, tolerations, GRES, visible-device variables) is the profile's
`placement` from `GET /spawn-options`: the platform's one accelerator table (the settings'
`devices`), the same the platform's jobs use.

Each returns a fresh dict `{trait name: value}` for the child spawner (KubeSpawner, SlurmSpawner,
the local process spawner). Dict values are merged into, and list values appended to, what the
deployment configured (see `backends.apply_overrides`). No I/O here; tests compare dict literals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

MIB = 1024 * 1024

Resources = Mapping[str, float | int]


class BuildError(ValueError):
    """The profile cannot be expressed on this backend (a sentence for the user)."""


def devices(resources: Resources) -> dict[str, int]:
    """Device counts (`vendor/device` keys with a positive count) in a resource map."""
    return {k: int(v) for k, v in sorted(resources.items()) if "/" in k and int(v) > 0}


def profile_resources(profile: Mapping[str, Any]) -> dict[str, float | int]:
    """The resources a profile asks for, as the platform would allocate them."""
    out: dict[str, float | int] = {}
    if profile.get("cpu") is not None:
        out["cpu"] = float(profile["cpu"])
    if profile.get("memory") is not None:
        out["memory"] = int(profile["memory"])
    acc = profile.get("accelerator") or None
    if acc and acc.get("type") and int(acc.get("count") or 0) > 0:
        out[acc["type"]] = int(acc["count"])
    return out


def placed(placement: Mapping[str, Any] | None, kind: str, backend: str) -> Mapping[str, Any]:
    """The profile's placement on one backend (`{}` when it has none for this device kind)."""
    if not placement or placement.get("type") != kind:
        return {}
    return placement.get(backend) or {}


def server_env(
    api_url: str, vc: str, profile: str, allocation_id: Any = None, kernel: str | None = None
) -> dict[str, str]:
    """The `YITONG_*` variables every backend gives the user's server (docs/architecture.md)."""
    env = {"YITONG_API_URL": api_url, "YITONG_VC": vc, "YITONG_PROFILE": profile}
    if allocation_id is not None:
        env["YITONG_ALLOCATION_ID"] = str(allocation_id)
    if kernel:
        env["YITONG_KERNEL"] = kernel
    return env


def limits(resources: Resources) -> dict[str, Any]:
    """cpu/memory as Spawner limit and guarantee traits (guarantee = limit: what was reserved)."""
    out: dict[str, Any] = {}
    if resources.get("cpu"):
        out["cpu_limit"] = out["cpu_guarantee"] = float(resources["cpu"])
    if resources.get("memory"):
        out["mem_limit"] = out["mem_guarantee"] = int(resources["memory"])
    return out


def kube_overrides(
    *,
    vc: str,
    profile: Mapping[str, Any],
    resources: Resources,
    env: Mapping[str, str],
    namespace_prefix: str = "yitong-",
    placement: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """KubeSpawner traits: namespace per VC, Kueue queue label, device resources, placement."""
    out: dict[str, Any] = {"namespace": f"{namespace_prefix}{vc}"}
    if profile.get("image"):
        out["image"] = profile["image"]
    out.update(limits(resources))
    devs = devices(resources)
    selector: dict[str, str] = {}
    tols: list[dict[str, Any]] = []
    if devs:
        out["extra_resource_limits"] = {k: str(n) for k, n in devs.items()}
        out["extra_resource_guarantees"] = {k: str(n) for k, n in devs.items()}
        for kind in devs:
            where = placed(placement, kind, "kubernetes")
            selector.update(where.get("node_selector") or {})
            tols.extend(dict(t) for t in where.get("tolerations") or [])
    if selector:
        out["node_selector"] = selector
    if tols:
        out["tolerations"] = tols
    if profile.get("arch"):
        out["node_affinity_required"] = [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": [profile["arch"]]}]}
        ]
    out["extra_labels"] = {
        "kueue.x-k8s.io/queue-name": vc,
        "yitong.io/vc": vc,
        "yitong.io/profile": str(profile.get("name", "")),
    }
    out["environment"] = dict(env)
    return out


def layered(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base`` (a z2jh profile's KubeSpawner traits under the platform's): dicts
    merged, lists concatenated, anything else from ``top``."""
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            out[key] = {**below, **value}
        elif isinstance(value, list) and isinstance(below, list):
            out[key] = [*below, *value]
        else:
            out[key] = value
    return out


def kube_security(run_as_user: int = 1000, fs_group: int | None = 1000) -> dict[str, Any]:
    """KubeSpawner traits that confine a notebook pod: a non-root uid/gid, ``fsGroup``, no privilege
    escalation, no capabilities, the runtime's seccomp profile, no service-account token."""
    if run_as_user < 1:
        raise BuildError(f"run_as_user {run_as_user}: notebook pods never run as root")
    pod_context: dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    return {
        "uid": run_as_user,
        "gid": run_as_user,
        "fs_gid": fs_group,
        "allow_privilege_escalation": False,
        "automount_service_account_token": False,
        "container_security_context": {"runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
        "pod_security_context": pod_context,
    }


def slurm_overrides(
    *,
    vc: str,
    profile: Mapping[str, Any],
    resources: Resources,
    env: Mapping[str, str],
    partition: str = "",
    account_template: str = "{vc}",
    placement: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """batchspawner SlurmSpawner `req_*` traits: partition, account, cpus, memory, GRES."""
    out: dict[str, Any] = {}
    if partition:
        out["req_partition"] = partition
    if account_template:
        out["req_account"] = account_template.format(vc=vc, profile=profile.get("name", ""))
    if resources.get("cpu"):
        out["req_nprocs"] = str(max(1, math.ceil(float(resources["cpu"]))))
    if resources.get("memory"):
        out["req_memory"] = f"{max(1, math.ceil(int(resources['memory']) / MIB))}M"
    gres = []
    for kind, n in devices(resources).items():
        name = placed(placement, kind, "slurm").get("gres")
        if not name:
            raise BuildError(f"this Slurm cluster has no GRES configured for {kind}")
        gres.append(f"{name}:{n}")
    if gres:
        out["req_gres"] = ",".join(gres)
    out.update(limits(resources))
    out["environment"] = dict(env)
    return out


def local_overrides(
    *,
    resources: Resources,
    env: Mapping[str, str],
    visible_env: Sequence[str] = (),
    placement: Mapping[str, Any] | None = None,
    indices: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Local process traits: limits (informational) and device visibility variables.

    Every variable of the table (`visible_env`) is set, empty unless the profile's placement lists
    it for an allocated device, so a CPU profile on a machine with GPUs sees none. The value is
    the device indices the platform picked for this server (`indices`, the allocation's
    `devices.visible`), else 0..n-1 (a platform that did not place them).
    """
    environment = dict(env)
    environment.update(dict.fromkeys(visible_env, ""))
    for kind, n in devices(resources).items():
        chosen = list(indices) if indices and len(indices) == n else list(range(n))
        for name in placed(placement, kind, "local").get("visible_env") or []:
            environment[name] = ",".join(str(i) for i in chosen)
    out = limits(resources)
    out["environment"] = environment
    return out
