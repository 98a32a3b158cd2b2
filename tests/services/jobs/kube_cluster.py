"""A stand-in Kubernetes cluster for the job backend's tests (`FakeCluster`).

Kubernetes, Kueue and a kubelet cannot run here: this is the system boundary, and everything on
the far side of the Kubernetes API is a stand-in. The backend talks real HTTP to the kmock
emulator (`kmock_shims.Emulator`, with more shims below); three stand-ins work the emulator
over the same HTTP API, every `interval` seconds, level-triggered like real controllers:

- **Kueue** (`KueueStandIn`): unsuspends a suspended Job labelled `kueue.x-k8s.io/queue-name`
  when that LocalQueue exists in the Job's namespace, its ClusterQueue admits the namespace, the
  priority class exists, and the ClusterQueue's `nominalQuota` (summed over flavors) covers the
  Job's requests x parallelism plus what its admitted Jobs hold; otherwise the Job stays
  suspended (`pending` says why). Not emulated: Workload objects, cohort borrowing,
  preemption, flavor node selectors injected into pods.
- **Job controller** (`JobControllerStandIn`): for an unsuspended Indexed Job, one pod per
  completion index from the template (`<job>-<i>-<random>`, `hostname: <job>-<i>`, the index as
  label and annotation, `batch.kubernetes.io/job-name`, an owner reference); `status` counts
  and the `Complete` / `Failed` (`BackoffLimitExceeded`, `DeadlineExceeded`) / `Suspended`
  conditions from the pods' phases; `ttlSecondsAfterFinished`; foreground deletion (the
  emulator adds the `foregroundDeletion` finalizer; dependents are deleted and their processes
  stopped before the finalizer goes) and garbage collection of objects whose owner is gone.
- **kubelet** (`KubeletStandIn`): runs a pending pod's first container as a local process.
  Images cannot be pulled, so the image is ignored and the command runs with the host's `PATH`
  (this Python's bin directory first, so `torchrun` and `python` are found). The environment is
  the container's `env`, resolved as Kubernetes does: `$(NAME)` expansion in values, command and
  args, `$$` -> `$`, `fieldRef` (the completion-index annotation, `metadata.name`,
  `metadata.namespace`, `status.podIP`) and `secretKeyRef`. Pods have no network namespace and
  no mounts of their own, so: names `<host>.<subdomain>` in env values and arguments become
  `127.0.0.1` (the headless Service's DNS), declared container ports are replaced by one free
  port per subdomain (two pods of a Job both listening on 29500 would collide on one host), and
  `hostPath` volume mounts are emulated by rewriting paths under a `mountPath` (in env values and
  arguments) to `<hostPath>/<subPath>`; other volume sources are not mounted (emptyDir at
  `/dev/shm` is the host's). stdout and stderr go to a file served by the `pods/{name}/log`
  subresource (kmock would return the pod object there), honouring `limitBytes`. A finished
  process sets the pod's phase and its `main` container's `terminated.exitCode`.

More emulator shims (kmock 0.8): `/api/v1/namespaces[/<name>]` parse as the cluster-scoped
Namespace resource (kmock fails on them); list calls honour `labelSelector`; DELETE with
`propagationPolicy: Foreground` keeps the object with a `foregroundDeletion` finalizer.

`sent` records every object body created or patched by clients other than the stand-ins, for
strict validation. `FakeCluster.start()` writes a kubeconfig (`kubeconfig`) for the backend.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import datetime
import json
import logging
import os
import re
import secrets
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.web
import kmock
from kmock._internal import enums, parsing
from spawner.kmock_shims import Emulator, write_kubeconfig

from yitong_services.vcs.quantities import parse_amount

log = logging.getLogger(__name__)

STAND_IN = "X-Yitong-Stand-In"  # header the stand-ins send; their requests are not recorded in `sent`
INDEX = "batch.kubernetes.io/job-completion-index"
RESOURCES = {  # what the emulator lists even when empty: key -> (namespaced, kind)
    "v1/namespaces": (False, "Namespace"),
    "v1/pods": (True, "Pod"),
    "v1/services": (True, "Service"),
    "v1/secrets": (True, "Secret"),
    "v1/events": (True, "Event"),
    "batch/v1/jobs": (True, "Job"),
    "kueue.x-k8s.io/v1beta1/resourceflavors": (False, "ResourceFlavor"),
    "kueue.x-k8s.io/v1beta1/clusterqueues": (False, "ClusterQueue"),
    "kueue.x-k8s.io/v1beta1/localqueues": (True, "LocalQueue"),
    "kueue.x-k8s.io/v1beta1/workloadpriorityclasses": (False, "WorkloadPriorityClass"),
}
JOBS, PODS = "/apis/batch/v1/jobs", "/api/v1/pods"
KUEUE = "/apis/kueue.x-k8s.io/v1beta1"

# ---- emulator shims ----

_NAMESPACES_RE = re.compile(r"^/api/v1/namespaces(?:/([^/]+))?/?$")
_original_parse_path = parsing.parse_path


def _parse_path(path: str) -> parsing.ParsedPath:
    match = _NAMESPACES_RE.match(path)
    if match:  # the Namespace resource itself, not a namespace prefix
        return parsing.ParsedPath("", "v1", "namespaces", None, match.group(1), None)
    return _original_parse_path(path)


if getattr(parsing.parse_path, "__name__", "") != "_parse_path":
    parsing.parse_path = _parse_path


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> float:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC).timestamp()


def _split_selector(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in [*parts, cur] if p.strip()]


def matches(selector: str, labels: dict[str, str]) -> bool:
    """Kubernetes label selector syntax: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`."""
    for term in _split_selector(selector or ""):
        if m := re.fullmatch(r"(\S+)\s+(in|notin)\s+\((.*)\)", term):
            values = {v.strip() for v in m.group(3).split(",")}
            if (labels.get(m.group(1)) in values) != (m.group(2) == "in"):
                return False
        elif "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


class ClusterEmulator(Emulator):
    """kmock plus: label selectors, foreground deletion, pod logs, a record of what clients sent."""

    cluster: FakeCluster | None = None
    sent: list[dict[str, Any]]

    async def _handle(self, request):
        if request.resource is not None and request.resource.plural == "pods" and request.subresource == "log":
            return await self._serve_log(request)
        if (
            STAND_IN.lower() not in {k.lower() for k in request.headers}
            and isinstance(request.data, dict)
            and "kind" in request.data
            and request.action in (enums.action.CREATE, enums.action.UPDATE)
        ):
            self.sent.append(copy.deepcopy(request.data))
        if request.action == enums.action.DELETE and request.name is not None:
            policy = request.params.get("propagationPolicy") or (
                request.data.get("propagationPolicy") if isinstance(request.data, dict) else None
            )
            if policy == "Foreground":
                async with self._lock:
                    key = (request.resource, request.namespace, request.name)
                    if key in self._objects and not self._objects[key].deleted:
                        obj = self._objects[key]
                        finalizers = list(obj.get("metadata", {}).get("finalizers") or [])
                        if "foregroundDeletion" not in finalizers and not obj.get("metadata", {}).get(
                            "deletionTimestamp"
                        ):
                            obj.patch({"metadata": {"finalizers": [*finalizers, "foregroundDeletion"]}})
        return await super()._handle(request)

    async def _serve_list(self, request):
        payload = await super()._serve_list(request)
        selector = request.params.get("labelSelector")
        if selector:
            payload["items"] = [
                o for o in payload["items"] if matches(selector, o.get("metadata", {}).get("labels") or {})
            ]
        return payload

    async def _serve_log(self, request) -> aiohttp.web.Response:
        key = (kmock.resource("", "v1", "pods"), request.namespace, request.name)
        if key not in self._objects or self._objects[key].deleted:
            return aiohttp.web.json_response(
                {"kind": "Status", "code": 404, "message": f"pods {request.name!r} not found"}, status=404
            )
        path = self.cluster.kubelet.log_path(request.namespace, request.name) if self.cluster else None
        if path is None or not path.exists():
            return aiohttp.web.json_response(
                {
                    "kind": "Status",
                    "code": 400,
                    "message": f'container "main" in pod "{request.name}" is waiting to start',
                },
                status=400,
            )
        data = path.read_bytes()
        if "limitBytes" in request.params:
            data = data[: int(request.params["limitBytes"])]
        return aiohttp.web.Response(body=data, content_type="text/plain")


# ---- HTTP for the stand-ins ----


class Api:
    def __init__(self, url: str, who: str) -> None:
        self.url, self.who = url.rstrip("/"), who
        self.session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        self.session = aiohttp.ClientSession(headers={STAND_IN: self.who})

    async def close(self) -> None:
        if self.session:
            await self.session.close()

    async def request(self, method: str, path: str, body: Any = None, **params: str) -> dict[str, Any] | None:
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
        async with self.session.request(method, self.url + path, json=body, params=params, headers=headers) as r:
            if r.status == 404:
                return None
            data = await r.json(content_type=None)
            if r.status >= 400:
                raise RuntimeError(f"{method} {path}: {r.status} {data}")
            return data

    async def items(self, path: str, selector: str = "") -> list[dict[str, Any]]:
        found = await self.request("GET", path, **({"labelSelector": selector} if selector else {}))
        return list((found or {}).get("items") or [])

    async def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        return await self.request("PATCH", path, body)

    async def delete(self, path: str) -> None:
        await self.request("DELETE", path)


def obj_path(obj: dict[str, Any], plural: str, prefix: str = "/api/v1") -> str:
    meta = obj["metadata"]
    return f"{prefix}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}


def finished(job: dict[str, Any]) -> bool:
    return bool({"Complete", "Failed"} & set(conditions(job)))


def job_requests(job: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    spec = job["spec"]
    for c in spec["template"]["spec"]["containers"]:
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            out[name] = out.get(name, 0) + parse_amount(name, value) * int(spec.get("parallelism") or 1)
    return out


# ---- Kueue ----


class KueueStandIn:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.pending: dict[tuple[str, str], str] = {}  # (namespace, job) -> why it is not admitted
        self.admitted: list[tuple[str, str]] = []

    async def step(self) -> None:
        jobs = await self.api.items(JOBS)
        queues = {
            (q["metadata"]["namespace"], q["metadata"]["name"]): q for q in await self.api.items(f"{KUEUE}/localqueues")
        }
        cqs = {c["metadata"]["name"]: c for c in await self.api.items(f"{KUEUE}/clusterqueues")}
        classes = {p["metadata"]["name"] for p in await self.api.items(f"{KUEUE}/workloadpriorityclasses")}
        usage: dict[str, dict[str, float]] = {}
        waiting = []
        for job in jobs:
            labels, meta = job["metadata"].get("labels") or {}, job["metadata"]
            queue = labels.get("kueue.x-k8s.io/queue-name")
            if queue is None or finished(job) or meta.get("deletionTimestamp"):
                continue
            lq = queues.get((meta["namespace"], queue))
            cq_name = lq["spec"]["clusterQueue"] if lq else None
            if job["spec"].get("suspend"):
                waiting.append((job, lq, cq_name))
            elif cq_name:
                held = usage.setdefault(cq_name, {})
                for r, amount in job_requests(job).items():
                    held[r] = held.get(r, 0) + amount
        for job, lq, cq_name in sorted(waiting, key=lambda w: w[0]["metadata"].get("creationTimestamp") or ""):
            key = (job["metadata"]["namespace"], job["metadata"]["name"])
            why = self.why_not(
                job, lq, cqs.get(cq_name) if cq_name else None, classes, usage.setdefault(cq_name or "", {})
            )
            if why:
                self.pending[key] = why
                continue
            self.pending.pop(key, None)
            for r, amount in job_requests(job).items():
                usage[cq_name][r] = usage[cq_name].get(r, 0) + amount
            await self.api.patch(obj_path(job, "jobs", "/apis/batch/v1"), {"spec": {"suspend": False}})
            self.admitted.append(key)

    @staticmethod
    def why_not(
        job: dict[str, Any], lq: dict | None, cq: dict | None, classes: set[str], held: dict[str, float]
    ) -> str:
        ns = job["metadata"]["namespace"]
        if lq is None:
            return "LocalQueue not found"
        if cq is None:
            return f"ClusterQueue {lq['spec']['clusterQueue']} not found"
        wanted_ns = ((cq["spec"].get("namespaceSelector") or {}).get("matchLabels") or {}).get(
            "kubernetes.io/metadata.name"
        )
        if wanted_ns not in (None, ns):
            return f"ClusterQueue {cq['metadata']['name']} does not admit namespace {ns}"
        priority = (job["metadata"].get("labels") or {}).get("kueue.x-k8s.io/priority-class")
        if priority and priority not in classes:
            return f"WorkloadPriorityClass {priority} not found"
        quota: dict[str, float] = {}
        for group in cq["spec"].get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for r in flavor.get("resources") or []:
                    quota[r["name"]] = quota.get(r["name"], 0) + parse_amount(r["name"], r["nominalQuota"])
        for r, amount in job_requests(job).items():
            if held.get(r, 0) + amount > quota.get(r, 0) + 1e-9:
                return f"insufficient quota for {r} in ClusterQueue {cq['metadata']['name']}"
        return ""


# ---- the Job controller ----


class JobControllerStandIn:
    def __init__(self, api: Api, kubelet: KubeletStandIn) -> None:
        self.api, self.kubelet = api, kubelet

    async def step(self) -> None:
        jobs = await self.api.items(JOBS)
        pods = await self.api.items(PODS)
        uids = {j["metadata"]["uid"] for j in jobs}
        for kind, path in (("pods", PODS), ("services", "/api/v1/services"), ("secrets", "/api/v1/secrets")):
            objs = pods if kind == "pods" else await self.api.items(path)
            for o in objs:  # garbage collection: the owner Job is gone (asked again: it may be newer than the list)
                for owner in [r for r in o["metadata"].get("ownerReferences") or [] if r.get("kind") == "Job"][:1]:
                    if owner["uid"] in uids:
                        continue
                    found = await self.api.request(
                        "GET", f"/apis/batch/v1/namespaces/{o['metadata']['namespace']}/jobs/{owner['name']}"
                    )
                    if found is None or found["metadata"]["uid"] != owner["uid"]:
                        await self.api.delete(obj_path(o, kind))
        for job in jobs:
            mine = [
                p
                for p in pods
                if any(r.get("uid") == job["metadata"]["uid"] for r in p["metadata"].get("ownerReferences") or [])
            ]
            await self.sync(job, mine)

    async def sync(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        meta, spec, status = job["metadata"], job["spec"], dict(job.get("status") or {})
        path = obj_path(job, "jobs", "/apis/batch/v1")
        if meta.get("deletionTimestamp"):
            if "foregroundDeletion" in (meta.get("finalizers") or []):
                await self.delete_dependents(job, pods)
                await self.api.patch(path, {"metadata": {"finalizers": []}})
            return
        if finished(job):
            ttl = spec.get("ttlSecondsAfterFinished")
            done = status.get("completionTime") or next(iter(conditions(job).values()), {}).get("lastTransitionTime")
            if ttl is not None and done and time.time() > parse_time(done) + ttl:
                await self.api.delete(path)
            return
        active = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        if spec.get("suspend"):
            for p in active:
                await self.api.delete(obj_path(p, "pods"))
            if "Suspended" not in conditions(job):
                await self.api.patch(
                    path,
                    {
                        "status": {
                            "conditions": [self.condition("Suspended", "JobSuspended", "Job suspended")],
                            "startTime": None,
                        }
                    },
                )
            return
        start = status.get("startTime") or now()
        completions = int(spec.get("completions") or 1)
        succeeded = {
            int(p["metadata"]["labels"][INDEX]) for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"
        }
        failed = sum((p.get("status") or {}).get("phase") == "Failed" for p in pods)
        new = {
            "startTime": start,
            "active": len(active),
            "succeeded": len(succeeded),
            "failed": failed,
            "conditions": [c for c in status.get("conditions") or [] if c["type"] != "Suspended"],
        }
        deadline = spec.get("activeDeadlineSeconds")
        failure = None
        if deadline is not None and time.time() > parse_time(start) + deadline:
            failure = ("DeadlineExceeded", "Job was active longer than specified deadline")
        elif failed > int(spec.get("backoffLimit", 6)):
            failure = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        if failure:
            for p in active:
                await self.kubelet.kill(p["metadata"]["namespace"], p["metadata"]["name"])
                await self.api.delete(obj_path(p, "pods"))
            new["active"] = 0
            new["conditions"] += [self.condition("FailureTarget", *failure), self.condition("Failed", *failure)]
        elif len(succeeded) >= completions:
            new["completionTime"] = now()
            new["completedIndexes"] = f"0-{completions - 1}" if completions > 1 else "0"
            new["conditions"] += [
                self.condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
                self.condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
            ]
        else:
            running = {int(p["metadata"]["labels"][INDEX]) for p in active}
            for index in range(completions):
                if index not in succeeded and index not in running:
                    await self.create_pod(job, index)
                    new["active"] += 1
        if {k: status.get(k) for k in new} != new:
            await self.api.patch(path, {"status": new})

    @staticmethod
    def condition(kind: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastProbeTime": now(),
            "lastTransitionTime": now(),
        }

    async def create_pod(self, job: dict[str, Any], index: int) -> None:
        meta, template = job["metadata"], copy.deepcopy(job["spec"]["template"])
        name = f"{meta['name']}-{index}-{secrets.token_hex(3)[:5]}"
        labels = {
            **(template.get("metadata") or {}).get("labels", {}),
            "batch.kubernetes.io/job-name": meta["name"],
            "job-name": meta["name"],
            "batch.kubernetes.io/controller-uid": meta["uid"],
            INDEX: str(index),
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": labels,
                "annotations": {INDEX: str(index)},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {**template["spec"], "hostname": f"{meta['name']}-{index}"},
        }
        await self.api.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods", pod)

    async def delete_dependents(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        uid = job["metadata"]["uid"]
        for p in pods:
            await self.api.delete(obj_path(p, "pods"))
            await self.kubelet.kill(p["metadata"]["namespace"], p["metadata"]["name"])
        for kind in ("services", "secrets"):
            for o in await self.api.items(f"/api/v1/namespaces/{job['metadata']['namespace']}/{kind}"):
                if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or []):
                    await self.api.delete(obj_path(o, kind))


# ---- the kubelet ----


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(NAME)` expansion: known names are replaced, `$$` is `$`, the rest stays."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2 : end]
                    out.append(env[name] if name in env else text[i : end + 1])
                    i = end + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KubeletStandIn:
    grace = 5.0

    def __init__(self, api: Api, root: Path) -> None:
        self.api, self.root = api, root
        self.procs: dict[tuple[str, str], asyncio.subprocess.Process] = {}
        self.reported: set[tuple[str, str]] = set()
        self.started: list[dict[str, Any]] = []  # {"pod", "argv", "env"} as run
        self.ports: dict[tuple[str, str, int], int] = {}

    def pod_dir(self, namespace: str, name: str) -> Path:
        return self.root / namespace / name

    def log_path(self, namespace: str, name: str) -> Path:
        return self.pod_dir(namespace, name) / "main.log"

    async def step(self) -> None:
        pods = await self.api.items(PODS)
        seen = set()
        for pod in pods:
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            seen.add(key)
            phase = (pod.get("status") or {}).get("phase")
            if key not in self.procs and phase == "Pending" and not pod["metadata"].get("deletionTimestamp"):
                await self.run(key, pod)
            proc = self.procs.get(key)
            if proc is not None and proc.returncode is not None and key not in self.reported:
                self.reported.add(key)
                await self.set_terminated(key, pod, proc.returncode)
        for key in [k for k in self.procs if k not in seen]:
            await self.kill(*key)

    async def resolve_env(self, pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str] | None:
        env: dict[str, str] = {}
        meta = pod["metadata"]
        fields = {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"], "status.podIP": "127.0.0.1"}
        fields |= {f"metadata.annotations['{k}']": v for k, v in (meta.get("annotations") or {}).items()}
        fields |= {f"metadata.labels['{k}']": v for k, v in (meta.get("labels") or {}).items()}
        for item in container.get("env") or []:
            if "value" in item:
                env[item["name"]] = expand(item["value"], env)
            elif ref := (item.get("valueFrom") or {}).get("fieldRef"):
                env[item["name"]] = fields.get(ref["fieldPath"], "")
            elif ref := (item.get("valueFrom") or {}).get("secretKeyRef"):
                secret = await self.api.request("GET", f"/api/v1/namespaces/{meta['namespace']}/secrets/{ref['name']}")
                if secret is None or ref["key"] not in (secret.get("data") or {}):
                    return None  # CreateContainerConfigError: tried again next step
                env[item["name"]] = base64.b64decode(secret["data"][ref["key"]]).decode()
            else:
                env[item["name"]] = ""
        return env

    def rewrite(self, pod: dict[str, Any], container: dict[str, Any]):
        """Functions standing in for DNS, per-pod network namespaces and volume mounts."""
        spec, meta = pod["spec"], pod["metadata"]
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        mounts = []
        for m in container.get("volumeMounts") or []:
            host = (volumes.get(m["name"]) or {}).get("hostPath")
            if host:
                mounts.append((m["mountPath"].rstrip("/"), str(Path(host["path"]) / m.get("subPath", ""))))
        mounts.sort(key=lambda m: -len(m[0]))
        subdomain = spec.get("subdomain")
        ports = {}
        if subdomain:
            for p in container.get("ports") or []:
                key = (meta["namespace"], subdomain, int(p["containerPort"]))
                ports[str(p["containerPort"])] = str(self.ports.setdefault(key, free_port()))
        host_re = (
            re.compile(rf"(?<![A-Za-z0-9.-])[a-z0-9-]+\.{re.escape(subdomain)}(?:\.[a-z0-9.-]*)?(?![A-Za-z0-9-])")
            if subdomain
            else None
        )

        def value(text: str) -> str:
            for mount, host in mounts:  # a path at the start or after "=", up to "/" or the end
                text = re.sub(rf"(?<![^=]){re.escape(mount)}(?![^/])", lambda _m, h=host: h, text)
            if host_re:
                text = host_re.sub("127.0.0.1", text)
            for port, local in ports.items():
                text = local if text == port else re.sub(rf"(?<=[=:]){port}(?![0-9])", local, text)
            return text

        return value

    async def run(self, key: tuple[str, str], pod: dict[str, Any]) -> None:
        container = pod["spec"]["containers"][0]
        env = await self.resolve_env(pod, container)
        if env is None:
            return
        argv = [expand(a, env) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
        value = self.rewrite(pod, container)
        argv = [value(a) for a in argv]
        env = {k: value(v) for k, v in env.items()}
        full = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": os.environ.get("HOME", "/tmp"),
            "HOSTNAME": pod["spec"].get("hostname") or key[1],
            **env,
        }
        here = self.pod_dir(*key)
        here.mkdir(parents=True, exist_ok=True)
        self.started.append({"pod": pod, "argv": argv, "env": env})
        started = now()
        with open(self.log_path(*key), "ab") as out:
            try:
                self.procs[key] = await asyncio.create_subprocess_exec(
                    *argv,
                    env=full,
                    cwd=here,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=out,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as e:
                out.write(f"cannot start {argv[:1]}: {e}\n".encode())
                self.reported.add(key)
                await self.set_terminated(key, pod, 128, "StartError")
                return
        status = {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "hostIP": "127.0.0.1",
            "startTime": started,
            "conditions": [
                {"type": t, "status": "True"} for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": container["name"],
                    "ready": True,
                    "restartCount": 0,
                    "image": container.get("image", ""),
                    "imageID": "",
                    "state": {"running": {"startedAt": started}},
                }
            ],
        }
        await self.api.patch(obj_path(pod, "pods"), {"status": status})

    async def set_terminated(
        self, key: tuple[str, str], pod: dict[str, Any], code: int, reason: str | None = None
    ) -> None:
        if code < 0:  # killed by a signal: a container runtime reports 128 + signal
            code = 128 - code
        container = pod["spec"]["containers"][0]
        state = {
            "terminated": {
                "exitCode": code,
                "reason": reason or ("Completed" if code == 0 else "Error"),
                "finishedAt": now(),
            }
        }
        status = {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": [{"type": t, "status": "False"} for t in ("ContainersReady", "Ready")],
            "containerStatuses": [
                {
                    "name": container["name"],
                    "ready": False,
                    "restartCount": 0,
                    "image": container.get("image", ""),
                    "imageID": "",
                    "state": state,
                }
            ],
        }
        await self.api.patch(obj_path(pod, "pods"), {"status": status})

    async def kill(self, namespace: str, name: str) -> None:
        proc = self.procs.pop((namespace, name), None)
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), self.grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()

    def alive(self) -> list[tuple[str, str]]:
        return [k for k, p in self.procs.items() if p.returncode is None]


# ---- the cluster ----


class FakeCluster:
    interval = 0.2

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.errors: list[str] = []

    async def start(self) -> FakeCluster:
        self.emulator = ClusterEmulator()
        self.emulator.cluster, self.emulator.sent = self, []
        for key, (namespaced, kind) in RESOURCES.items():
            self.emulator.resources[key] = kmock.ResourceInfo(namespaced=namespaced, kind=kind)
        await self.emulator.__aenter__()
        self.server = kmock.Server(self.emulator)
        await self.server.__aenter__()
        self.url = str(self.server.url).rstrip("/")
        self.root.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = self.root / "kubeconfig"
        write_kubeconfig(str(self.kubeconfig), self.url)
        self.apis = [Api(self.url, who) for who in ("kueue", "job-controller", "kubelet", "test")]
        for api in self.apis:
            await api.open()
        self.api = self.apis[3]
        self.kubelet = KubeletStandIn(self.apis[2], self.root / "pods")
        self.kueue = KueueStandIn(self.apis[0])
        self.jobs = JobControllerStandIn(self.apis[1], self.kubelet)
        self._task = asyncio.create_task(self._loop())
        return self

    @property
    def sent(self) -> list[dict[str, Any]]:
        return self.emulator.sent

    async def _loop(self) -> None:
        while True:
            for part in (self.kueue, self.jobs, self.kubelet):
                try:
                    await part.step()
                except Exception as e:  # a stand-in's bug must show in the test, not stop the cluster
                    self.errors.append(f"{type(part).__name__}: {e!r}")
                    log.exception("stand-in %s failed", type(part).__name__)
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        for key in list(self.kubelet.procs):
            await self.kubelet.kill(*key)
        for api in self.apis:
            await api.close()
        await self.server.__aexit__(None, None, None)
        await self.emulator.__aexit__(None, None, None)

    def objects(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Live objects of one resource (by plural) in the emulator, for assertions."""
        out = []
        for (resource, ns, _name), obj in self.emulator.objects.items():
            if resource.plural == plural and not obj.deleted and (namespace is None or ns == namespace):
                out.append(json.loads(json.dumps(dict(obj.raw))))
        return out

    async def wait(self, what, timeout: float = 30, message: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while not (found := what()):
            assert time.monotonic() < deadline, f"timed out waiting: {message} (stand-in errors: {self.errors})"
            await asyncio.sleep(0.05)
        return found
