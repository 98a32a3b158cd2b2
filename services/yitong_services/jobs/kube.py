"""The Kubernetes backend's manifests for one job: a headless Service and a batch/v1 Indexed Job.

Every node is one pod (completion index = node rank); pod ``<job>-0`` is reachable as
``<job>-0.<job>`` through the headless Service (``subdomain``), which is torchrun's static
rendezvous address. The Job is created suspended with ``kueue.x-k8s.io/queue-name``; Kueue
unsuspends it when the VC's ClusterQueue admits it (see ``kueue.py``).

Datasets: one volume (by default the PVC ``yitong-data`` holding the platform's data directory,
``hostPath`` for single-node clusters) mounted read-only per input with ``subPath`` = the
materialised version (``materialized/<manifest-hash>``) at ``/yitong/inputs/<mount>``; the
outputs directory is the same volume's ``jobs/<job id>/<outputs>`` at ``/yitong/outputs``.

Pods are confined: no service-account token is mounted, they run as a non-root uid
(``run_as_user``, default 1000; files in the volume group-owned by ``fs_group``) with no
privilege escalation, no capabilities and the runtime's default seccomp profile
(``pod_security``); the VC namespace's NetworkPolicies (``netpol.py``) fence their traffic.

Kubernetes expands ``$(NAME)`` in command, args and env values: user text has every ``$``
doubled so it arrives unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..vcs.devices import DEVICES, DeviceMap
from ..vcs.quantities import format_amount
from .devices import BuildError, device_map
from .kueue import priority_class_name, vc_queue_manifests
from .launch import RDZV_PORT, job_env, user_argv
from .spec import Framework, JobSpec

__all__ = ["job_manifests", "vc_queue_manifests", "job_object_name"]

DNS_LABEL_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
DEFAULT_DATA_VOLUME: Mapping[str, Any] = {"persistentVolumeClaim": {"claimName": "yitong-data"}}
INPUTS_DIR = "/yitong/inputs"
OUTPUT_DIR = "/yitong/outputs"
INDEX_ANNOTATION = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def literal(text: str) -> str:
    """``$`` doubled: Kubernetes turns ``$$`` back into ``$`` and never expands ``$(...)`` in it."""
    return text.replace("$", "$$")


def job_object_name(spec: JobSpec, job_id: str | int) -> str:
    """``<name>-<id>``: the Job's and the Service's name (saved in the job's state by the runner)."""
    name = f"{spec.name}-{job_id}"
    if not DNS_LABEL_RE.match(name) or len(name) > 52:
        raise BuildError(f"job id {job_id!r} does not make a Kubernetes name with {spec.name!r}")
    return name


def container_command(spec: JobSpec, host0: str) -> list[str]:
    procs = spec.procs_per_node or 1
    argv = [literal(a) for a in user_argv(spec)]
    if spec.framework is Framework.pytorch:
        return [
            "torchrun",
            f"--nnodes={spec.nodes}",
            f"--nproc-per-node={procs}",
            "--node-rank=$(JOB_COMPLETION_INDEX)",
            f"--master-addr={host0}",
            f"--master-port={RDZV_PORT}",
            "--no-python",
            *argv,
        ]
    if spec.framework is Framework.mpi:
        if spec.nodes > 1:
            raise BuildError("multi-node MPI jobs are not supported on Kubernetes yet (they need the MPI Operator)")
        return ["mpirun", "-np", str(procs), *argv]
    return argv


def pod_security(run_as_user: int = 1000, fs_group: int | None = 1000) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(pod securityContext, container securityContext)`` of a confined pod (uid 0 is refused)."""
    if run_as_user < 1:
        raise BuildError(f"run_as_user {run_as_user}: user pods never run as root")
    pod: dict[str, Any] = {
        "runAsNonRoot": True,
        "runAsUser": run_as_user,
        "runAsGroup": run_as_user,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if fs_group is not None:
        pod["fsGroup"] = fs_group
    container = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True}
    return pod, container


def _resources(spec: JobSpec) -> dict[str, Any]:
    amounts = {"cpu": format_amount("cpu", spec.cpu), "memory": format_amount("memory", spec.memory)}
    if spec.accelerator is not None:
        amounts[spec.accelerator.type] = str(spec.accelerator.count)
    return {"limits": dict(amounts), "requests": dict(amounts)}


def job_manifests(
    spec: JobSpec,
    job_id: str | int,
    namespace: str,
    queue: str,
    *,
    image: str | None = None,
    input_subpaths: Mapping[str, str] | None = None,
    data_volume: Mapping[str, Any] = DEFAULT_DATA_VOLUME,
    devices: Mapping[str, DeviceMap] = DEVICES,
    ttl_seconds_after_finished: int | None = None,
    run_as_user: int = 1000,
    fs_group: int | None = 1000,
) -> list[dict[str, Any]]:
    """``[Service, Job]`` for ``spec``; ``image`` overrides ``environment.image`` (e.g. resolved from
    the kernel); ``input_subpaths`` maps each input mount to its path inside ``data_volume``."""
    image = image or spec.environment.image
    if not image:
        raise BuildError("Kubernetes jobs need environment.image (or an image for the kernel)")
    name = job_object_name(spec, job_id)
    host0 = f"{name}-0.{name}"
    labels = {
        "app.kubernetes.io/managed-by": "yitong",
        "yitong.io/job-id": str(job_id),
        "yitong.io/job-name": spec.name,
        "yitong.io/vc": spec.vc,
    }
    subpaths = dict(input_subpaths or {})
    env = job_env(
        spec,
        job_id,
        output_dir=OUTPUT_DIR,
        master_addr=host0,
        hosts=[f"{name}-{i}.{name}" for i in range(spec.nodes)],
        devices=devices,
        input_paths={str(i.mount): f"{INPUTS_DIR}/{i.mount}" for i in spec.inputs},
    )
    missing = [str(i.mount) for i in spec.inputs if str(i.mount) not in subpaths]
    if missing:
        raise ValueError(f"no materialised path for input mount(s) {', '.join(missing)}")
    if bad := [p for p in subpaths.values() if p.startswith("/") or ".." in p.split("/")]:
        raise ValueError(f"input subPath {bad[0]!r} must be relative to the data volume")
    env_list = [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": INDEX_ANNOTATION}}}]
    env_list += [{"name": k, "value": literal(v)} for k, v in env.items()]
    env_list.append({"name": "YITONG_NODE_RANK", "value": "$(JOB_COMPLETION_INDEX)"})
    mounts = [
        {"name": "data", "mountPath": f"{INPUTS_DIR}/{i.mount}", "subPath": subpaths[str(i.mount)], "readOnly": True}
        for i in spec.inputs
    ]
    mounts += [
        {"name": "data", "mountPath": OUTPUT_DIR, "subPath": f"jobs/{job_id}/{spec.outputs}"},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]
    pod_context, container_context = pod_security(run_as_user, fs_group)
    container = {
        "name": "main",
        "image": image,
        "command": container_command(spec, host0),
        "env": env_list,
        "resources": _resources(spec),
        "ports": [{"name": "rdzv", "containerPort": RDZV_PORT, "protocol": "TCP"}],
        "volumeMounts": mounts,
        "securityContext": container_context,
    }
    pod_spec: dict[str, Any] = {
        "subdomain": name,
        "restartPolicy": "Never",
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "securityContext": pod_context,
        "containers": [container],
        "volumes": [{"name": "data", **dict(data_volume)}, {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }
    if spec.accelerator is not None:
        dev = device_map(spec.accelerator.type, devices)
        if dev.node_selector:
            pod_spec["nodeSelector"] = dict(dev.node_selector)
        if dev.tolerations:
            pod_spec["tolerations"] = dev.toleration_manifests()
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": spec.nodes,
        "parallelism": spec.nodes,
        "backoffLimit": spec.retries,
        "suspend": True,
        "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
    }
    if spec.max_run_time:
        job_spec["activeDeadlineSeconds"] = spec.max_run_time
    if ttl_seconds_after_finished is not None:
        job_spec["ttlSecondsAfterFinished"] = ttl_seconds_after_finished
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"yitong.io/job-id": str(job_id)},
            "ports": [{"name": "rdzv", "port": RDZV_PORT, "targetPort": RDZV_PORT, "protocol": "TCP"}],
        },
    }
    job_labels = {
        **labels,
        "kueue.x-k8s.io/queue-name": queue,
        "kueue.x-k8s.io/priority-class": priority_class_name(spec.priority_value),
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": job_labels},
        "spec": job_spec,
    }
    return [service, job]
