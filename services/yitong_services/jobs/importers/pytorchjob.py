"""Kubeflow PyTorchJob (``kubeflow.org/v1``) -> Yitong job (mapping table in docs/jobs-spec.md).

Master + Worker replicas become ``nodes``; both must run the same container (image, command,
resources). The job is ``framework: pytorch``: Yitong's torchrun gives each process the same
``MASTER_ADDR``/``MASTER_PORT``/``RANK``/``WORLD_SIZE`` contract the operator sets, so a plain
``python train.py`` keeps working. A container that starts ``torchrun`` (or ``python -m
torch.distributed.run|launch``) itself has that launcher removed and its ``--nproc-per-node`` kept.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ...vcs.quantities import parse_amount
from ..spec import JobSpec, spec_from_dict
from ..spec_errors import JobSpecError
from .common import ImportRefused
from .forever import never_ends
from .sandbox import command_notes, privilege_notes

LAUNCH_MODULES = ("torch.distributed.run", "torch.distributed.launch")
VALUE_OPTS = {
    "nproc-per-node",
    "nnodes",
    "node-rank",
    "master-addr",
    "master-port",
    "rdzv-backend",
    "rdzv-endpoint",
    "rdzv-id",
    "rdzv-conf",
    "max-restarts",
    "monitor-interval",
    "start-method",
    "role",
    "log-dir",
    "redirects",
    "tee",
    "local-ranks-filter",
}
ROCM_RE = re.compile(r"rocm", re.IGNORECASE)
CONTAINER_MAPPED = {"name", "image", "command", "args", "env", "resources"}


def strip_launcher(argv: list[str]) -> tuple[list[str], str | None]:
    """``(program argv, --nproc-per-node value)``; argv unchanged when it starts no launcher."""
    if argv[:1] == ["torchrun"]:
        rest = argv[1:]
    elif (
        len(argv) >= 3 and argv[0].split("/")[-1].startswith("python") and argv[1] == "-m" and argv[2] in LAUNCH_MODULES
    ):
        rest = argv[3:]
    else:
        return argv, None
    nproc, module, no_python, i = None, False, False, 0
    while i < len(rest) and rest[i].startswith("-"):
        key, _, value = rest[i].lstrip("-").replace("_", "-").partition("=")
        if key in VALUE_OPTS and not value:
            i, value = i + 1, rest[i + 1] if i + 1 < len(rest) else ""
        module |= key in ("m", "module")
        no_python |= key == "no-python"
        if key == "nproc-per-node":
            nproc = value
        i += 1
    program = rest[i:]
    if not program:
        raise ImportRefused("command: the launcher has no training script")
    if no_python:
        return program, nproc
    return (["python", "-m", *program] if module else ["python", *program]), nproc


def _container(name: str, replica: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    where = f"spec.pytorchReplicaSpecs.{name}"
    pod = ((replica.get("template") or {}).get("spec")) or {}
    containers = pod.get("containers") or []
    if len(containers) != 1:
        named = [c for c in containers if isinstance(c, dict) and c.get("name") == "pytorch"]
        if len(named) != 1 or len(containers) > 1:
            raise ImportRefused(f"{where}.template.spec.containers: exactly one container (pytorch) is supported")
    notes += [
        f"{where}.template.spec.{k}: no counterpart, ignored" for k in pod if k not in ("containers", "securityContext")
    ]
    notes += privilege_notes(pod.get("securityContext"), f"{where}.template.spec.securityContext")
    notes += [
        f"{where}.{k}: no counterpart, ignored" for k in replica if k not in ("replicas", "template", "restartPolicy")
    ]
    if replica.get("restartPolicy") not in (None, "Never"):
        notes.append(
            f"{where}.restartPolicy: {replica['restartPolicy']} has no counterpart; use retries (the whole job is retried)"
        )
    c = containers[0]
    notes += [
        f"{where}.containers[0].{k}: no counterpart, ignored"
        for k in c
        if k not in CONTAINER_MAPPED and k != "securityContext"
    ]
    notes += privilege_notes(c.get("securityContext"), f"{where}.containers[0].securityContext")
    return c


def _resources(c: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    res = c.get("resources") or {}
    amounts = dict(res.get("requests") or {}) | dict(res.get("limits") or {})
    out: dict[str, Any] = {k: amounts[k] for k in ("cpu", "memory") if k in amounts}
    devices = {k: v for k, v in amounts.items() if "/" in k}
    if len(devices) > 1:
        raise ImportRefused(f"{where}.resources: one accelerator type per job, got {', '.join(devices)}")
    for kind, count in devices.items():
        out["accelerator"] = {"type": kind, "count": int(count)}
    notes += [
        f"{where}.resources.{k}: no counterpart, ignored"
        for k in amounts
        if k not in ("cpu", "memory") and "/" not in k
    ]
    missing = [f"{k} ({default})" for k, default in (("cpu", "1"), ("memory", "2Gi")) if k not in out]
    if missing:
        notes.append(
            f"{where}.resources: no {' or '.join(k.split()[0] for k in missing)} given; Yitong's default applies: {', '.join(missing)}"
        )
    return out


def import_pytorchjob(doc: dict[str, Any], vc: str | None = None) -> tuple[JobSpec, list[str]]:
    if doc.get("apiVersion") != "kubeflow.org/v1" or doc.get("kind") != "PyTorchJob":
        raise ImportRefused("apiVersion/kind: expected kubeflow.org/v1 PyTorchJob")
    meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
    replicas = spec.get("pytorchReplicaSpecs")
    if not isinstance(replicas, dict) or not replicas or not all(isinstance(r, dict) for r in replicas.values()):
        raise ImportRefused("spec.pytorchReplicaSpecs: a Master and/or Worker replica spec is required")
    if extra := [k for k in replicas if k not in ("Master", "Worker")]:
        raise ImportRefused(f"spec.pytorchReplicaSpecs.{extra[0]}: only Master and Worker replicas can be imported")
    if int(replicas.get("Master", {}).get("replicas", 1)) != 1 and "Master" in replicas:
        raise ImportRefused("spec.pytorchReplicaSpecs.Master.replicas: a PyTorchJob has exactly one Master")
    notes = [f"metadata.{k}: no counterpart, ignored" for k in meta if k not in ("name", "namespace")]
    notes += [
        f"spec.{k}: no counterpart, ignored"
        for k in spec
        if k not in ("pytorchReplicaSpecs", "runPolicy", "elasticPolicy", "nprocPerNode")
    ]
    containers = {n: _container(n, r, notes) for n, r in replicas.items()}
    first_name, first = next(iter(containers.items()))
    for n, c in containers.items():
        if any(c.get(k) != first.get(k) for k in ("image", "command", "args", "resources", "env")):
            raise ImportRefused(
                f"spec.pytorchReplicaSpecs.{n}: a different container than {first_name}; "
                "a Yitong job runs the same container on every node"
            )
    where = f"spec.pytorchReplicaSpecs.{first_name}.containers[0]"
    if not first.get("command"):
        # Kubernetes would run the image's ENTRYPOINT with these args; which program that is
        # cannot be known without pulling the image, and the first arg is no program
        given = " ".join(str(a) for a in first.get("args") or []) or "nothing"
        raise ImportRefused(
            f"{where}: no command, only args ({given[:80]}); the image's entrypoint cannot be known here — "
            "add command: [the entrypoint, e.g. python, /workspace/train.py] to the container and import again"
        )
    argv = [str(a) for a in (first.get("command") or []) + (first.get("args") or [])]
    argv, launcher_nproc = strip_launcher(argv)
    if launcher_nproc is not None:
        notes.append(
            "command: its torchrun launcher is replaced by Yitong's (node count and rendezvous are set per backend)"
        )
    out: dict[str, Any] = {
        "name": meta.get("name"),
        "vc": vc or meta.get("namespace"),
        "environment": {"image": first.get("image")},
        "command": argv,
        "framework": "pytorch",
        "nodes": sum(int(r.get("replicas", 1)) for r in replicas.values()),
        **_resources(first, where, notes),
    }
    acc = out.get("accelerator") or {}
    if ROCM_RE.search(str(first.get("image"))) and acc.get("type") == "nvidia.com/gpu":
        raise ImportRefused(
            f"{where}.resources: {first.get('image')} is a ROCm image for AMD GPUs but asks for nvidia.com/gpu; "
            "ask for amd.com/gpu (or use a CUDA image)"
        )
    notes += command_notes(" ".join(argv), f"{where}.command")
    if what := never_ends(" ".join(argv)):
        notes.append(
            f"{where}.command: {what} never ends, and the job succeeds only when every replica has: "
            "it would run until cancelled or max_run_time"
        )
    env = {}
    for e in first.get("env") or []:
        if "value" in e and "valueFrom" not in e:
            env[e["name"]] = str(e["value"])
        else:
            notes.append(f"{where}.env.{e.get('name')}: valueFrom has no counterpart, ignored")
    if env:
        out["env"] = env
    run = spec.get("runPolicy") or {}
    if run.get("backoffLimit") is not None:
        out["retries"] = int(run["backoffLimit"])
    if run.get("activeDeadlineSeconds"):
        out["max_run_time"] = int(run["activeDeadlineSeconds"])
    notes += [
        f"spec.runPolicy.{k}: no counterpart, ignored"
        for k in run
        if k not in ("backoffLimit", "activeDeadlineSeconds")
    ]
    elastic = spec.get("elasticPolicy") or {}
    notes += [
        f"spec.elasticPolicy.{k}: elastic training has no counterpart; the job runs on a fixed {out['nodes']} node(s)"
        for k in elastic
        if k != "nProcPerNode"
    ]
    nproc = spec.get("nprocPerNode", elastic.get("nProcPerNode", launcher_nproc))
    if nproc is not None:
        out["procs_per_node"] = _nproc(nproc, out)
    if not vc and not meta.get("namespace"):
        raise ImportRefused("metadata.namespace: missing; name the Yitong VC to submit to (--vc)")
    if not vc:
        notes.append(f"metadata.namespace: used as the VC {meta['namespace']!r} (override with --vc)")
    try:
        return spec_from_dict(out), notes
    except JobSpecError as e:
        raise ImportRefused(f"the imported job is not valid: {e}") from None


def _nproc(value: Any, out: dict[str, Any]) -> int:
    """``nprocPerNode``: a number, ``auto``/``gpu`` (one per accelerator, else 1) or ``cpu``."""
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    if text in ("auto", "gpu"):
        return int((out.get("accelerator") or {}).get("count", 1))
    if text == "cpu":
        return max(1, math.floor(parse_amount("cpu", out.get("cpu", 1))))
    raise ImportRefused(f"spec.nprocPerNode: {value!r} is not a number, auto, gpu or cpu")
