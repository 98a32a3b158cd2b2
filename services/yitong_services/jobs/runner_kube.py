"""The Kubernetes backend: each attempt is a suspended Indexed batch/v1 Job that Kueue admits.

``submit`` makes sure the VC's namespace and Kueue objects exist (``kueue.vc_queue_manifests``
with the VC's quota from the database, plus the three WorkloadPriorityClasses; created, or
merge-patched on 409, once per VC and quota per process), then creates the Job from
``kube.job_manifests`` and, owned by it (``ownerReferences``, so they go when it goes), the
headless Service and a Secret holding the attempt's tokens (``YITONG_JOB_TOKEN``, and the owner's hub
token as ``JUPYTERHUB_API_TOKEN``/``YT_TOKEN``). Each VC namespace gets its NetworkPolicies
(``netpol.py``) with its Kueue objects.

One Job name per job (``<name>-<id>``: the pods' DNS names ``<name>-<i>.<name>`` depend on
it), labelled ``yitong.io/attempt``: a new attempt deletes the previous attempt's Job
(foreground, waiting until it is gone) before creating its own; a Job of the same attempt is
reused, so a submit repeated after a restart creates nothing twice. The Job's
``backoffLimit`` is 0: retries are the platform's (a new attempt with its own token and
ledger run), never pod restarts inside one Job.

The ref is ``<namespace>/<name>/<attempt>/<nodes>``, saved and never recomputed. States come
from one Job list per namespace per poll (``app.kubernetes.io/managed-by=yitong``): conditions
``Complete`` -> succeeded, ``Failed`` -> failed (exit code from the pods' terminated
``main`` containers), suspended -> running ("waiting for Kueue admission"), a missing Job or
one of another attempt -> vanished. Logs are the pods' logs (rank = completion index), read
with ``limitBytes`` and cut at the offset; they last as long as the pods do.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.limits import clip
from .backend import Backend, Launch, Polled, SubmissionUnknown
from .kube import DEFAULT_DATA_VOLUME, job_manifests, literal
from .kueue import default_flavors, priority_class_manifests, vc_queue_manifests
from .launch import RDZV_PORT
from .netpol import Fence, vc_network_policies

log = logging.getLogger(__name__)

MANAGED = "app.kubernetes.io/managed-by=yitong"
ATTEMPT = "yitong.io/attempt"
INDEX = "batch.kubernetes.io/job-completion-index"
JOB_NAME = "batch.kubernetes.io/job-name"
SECRET_ENV = {
    "YITONG_JOB_TOKEN": "token",
    "JUPYTERHUB_API_TOKEN": "hub-token",
    "YT_TOKEN": "hub-token",
}  # via the Secret
LOG_CHUNK = 1 << 20
KUEUE = "/apis/kueue.x-k8s.io/v1beta1"
PATHS = {  # kind -> (API prefix, plural, namespaced)
    "Namespace": ("/api/v1", "namespaces", False),
    "Service": ("/api/v1", "services", True),
    "Secret": ("/api/v1", "secrets", True),
    "Pod": ("/api/v1", "pods", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "LocalQueue": (KUEUE, "localqueues", True),
    "ResourceFlavor": (KUEUE, "resourceflavors", False),
    "ClusterQueue": (KUEUE, "clusterqueues", False),
    "WorkloadPriorityClass": (KUEUE, "workloadpriorityclasses", False),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies", True),
    "InferenceService": ("/apis/serving.kserve.io/v1beta1", "inferenceservices", True),  # models/kserve.py
}


class NetworkPolicySettings(BaseModel):
    """``backends.kubernetes.network_policy``: what pods of a VC namespace may reach (see netpol.Fence)."""

    model_config = ConfigDict(extra="forbid")

    hub_namespace: str = Field("jupyterhub", description="namespace of the hub and its proxy")
    proxy_labels: dict[str, str] = Field(
        default_factory=lambda: {"app": "jupyterhub", "component": "proxy"},
        description="labels of the proxy pods (zero-to-jupyterhub's)",
    )
    proxy_port: int = Field(8000, ge=1, le=65535, description="the proxy pods' public HTTP port")
    hub_access_labels: dict[str, str] = Field(
        default_factory=lambda: {"hub.jupyter.org/network-access-singleuser": "true"},
        description="labels of the pods that may reach notebook servers (the hub and the proxy)",
    )
    dns_namespace: str = Field("kube-system", description="namespace of the cluster DNS")
    dns_labels: dict[str, str] = Field(
        default_factory=lambda: {"k8s-app": "kube-dns"}, description="labels of the DNS pods"
    )
    extra_egress: list[str] = Field(
        default_factory=list, description="CIDRs pods may also reach (a public URL outside the cluster)"
    )

    def fence(self) -> Fence:
        return Fence(**{**self.model_dump(), "extra_egress": tuple(self.extra_egress)})


class KubeSettings(BaseModel):
    """``backends.kubernetes`` (besides ``inventory``)."""

    model_config = ConfigDict(extra="forbid")

    namespace_prefix: str = Field("yitong-", description="namespace per VC: <prefix><vc> (shared with the hub)")
    data_volume: dict[str, Any] = Field(
        default_factory=lambda: dict(DEFAULT_DATA_VOLUME),
        description="volume source holding the data directory (inputs, outputs)",
    )
    images: dict[str, str] = Field(
        default_factory=dict, description="kernel name -> image, for specs without environment.image"
    )
    cohort: str | None = Field("yitong", description="Kueue cohort of every VC's ClusterQueue (null: no borrowing)")
    queue_endpoints: bool = Field(
        True,
        description="endpoints' InferenceServices run in KServe's RawDeployment mode with their pods queued in the"
        " VC's Kueue LocalQueue (needs Kueue's pod integration); false: KServe's default mode, not queued",
    )
    ttl_seconds_after_finished: int | None = Field(
        None, ge=0, description="delete finished Jobs (and their pods and logs) after this long"
    )
    kubeconfig: str | None = Field(None, description="null: $KUBECONFIG, else in-cluster, else ~/.kube/config")
    delete_timeout: float = Field(120.0, gt=0, description="seconds a retry waits for the previous attempt's Job to go")
    run_as_user: int = Field(1000, ge=1, description="uid (and gid) of job pods: never root (runAsNonRoot)")
    fs_group: int | None = Field(
        1000, ge=0, description="fsGroup of job pods (group of the files they write); null: none"
    )
    network_policy: NetworkPolicySettings | None = Field(
        default_factory=lambda: NetworkPolicySettings.model_validate({}),
        description="the VC namespace's NetworkPolicies (netpol.py): where the hub's proxy and DNS are; null: none",
    )


class KubeError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Kubernetes API {status}: {message}")
        self.status = status


@dataclass(frozen=True)
class KubeRef:
    namespace: str
    name: str
    attempt: int
    nodes: int

    @classmethod
    def parse(cls, ref: str) -> KubeRef:
        namespace, name, attempt, nodes = ref.split("/")
        return cls(namespace, name, int(attempt), int(nodes))

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}/{self.attempt}/{self.nodes}"


# ---- pure helpers ----


def object_path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
    prefix, plural, namespaced = PATHS[kind]
    path = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced and namespace else f"{prefix}/{plural}"
    return f"{path}/{name}" if name else path


def input_subpaths(input_paths: dict[str, str], data_dir: Path) -> dict[str, str]:
    """Each materialised input as a path inside the data volume (which holds ``data_dir``)."""
    root = data_dir.absolute()
    out = {}
    for mount, path in input_paths.items():
        try:
            out[mount] = Path(path).absolute().relative_to(root).as_posix()
        except ValueError:
            raise ValueError(
                f"input {mount}: {path} is not under the data directory {root}, which is what the data volume holds"
            ) from None
    return out


def attempt_manifests(manifests: list[dict[str, Any]], attempt: int, env: dict[str, str]) -> list[dict[str, Any]]:
    """``[Service, Job]`` from ``job_manifests`` -> ``[Job, Secret, Service]`` for one attempt:
    the attempt label, ``backoffLimit: 0``, the launch env (secrets by ``secretKeyRef``)."""
    service, job = json.loads(json.dumps(manifests))
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    secret_name = f"{name}-token"
    for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
        meta["labels"][ATTEMPT] = str(attempt)
    job["spec"]["backoffLimit"] = 0
    container = job["spec"]["template"]["spec"]["containers"][0]
    for key, value in env.items():
        if key in SECRET_ENV:
            ref = {"secretKeyRef": {"name": secret_name, "key": SECRET_ENV[key]}}
            container["env"].append({"name": key, "valueFrom": ref})
        else:
            container["env"].append({"name": key, "value": literal(value)})
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": secret_name,
            "namespace": namespace,
            "labels": {k: v for k, v in job["metadata"]["labels"].items() if not k.startswith("kueue.x-k8s.io/")},
        },
        "data": {SECRET_ENV[k]: base64.b64encode(v.encode()).decode() for k, v in env.items() if k in SECRET_ENV},
    }
    return [job, secret, service]


def owned_by(manifest: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    return {**manifest, "metadata": {**manifest["metadata"], "ownerReferences": [owner]}}


def pod_index(pod: dict[str, Any]) -> int | None:
    meta = pod.get("metadata") or {}
    value = (meta.get("labels") or {}).get(INDEX) or (meta.get("annotations") or {}).get(INDEX)
    return int(value) if value is not None and str(value).isdigit() else None


def newest_per_index(pods: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
        index = pod_index(pod)
        if index is not None:
            out[index] = pod
    return out


def exit_code(pods: list[dict[str, Any]]) -> int | None:
    """The first non-zero exit code of a ``main`` container by node index, else 0, else None."""
    codes = []
    for _index, pod in sorted(newest_per_index(pods).items()):
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            if status.get("name") == "main":
                done = (status.get("state") or {}).get("terminated") or (status.get("lastState") or {}).get(
                    "terminated"
                )
                if done and done.get("exitCode") is not None:
                    codes.append(int(done["exitCode"]))
    return next((c for c in codes if c != 0), 0 if codes else None)


def job_polled(job: dict[str, Any] | None, pods: list[dict[str, Any]], ref: KubeRef) -> Polled:
    """A Job (None: not found) and its pods -> the attempt's state."""
    where = f"Kubernetes Job {ref.namespace}/{ref.name}"
    if job is None:
        return Polled("vanished", None, f"{where} was deleted")
    if job["metadata"].get("labels", {}).get(ATTEMPT) != str(ref.attempt):
        return Polled("vanished", None, f"{where} now belongs to another attempt")
    if job["metadata"].get("deletionTimestamp"):
        return Polled("running", reason="being deleted")
    status = job.get("status") or {}
    true = {c["type"]: c for c in status.get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in true:
        return Polled("succeeded", exit_code(pods) or 0, "", true["Complete"].get("lastTransitionTime"))
    if "Failed" in true:
        cond = true["Failed"]
        code, why = exit_code(pods), cond.get("reason") or "Failed"
        if why == "DeadlineExceeded":
            reason = f"max_run_time of {job['spec'].get('activeDeadlineSeconds')}s exceeded (DeadlineExceeded)"
        elif why == "BackoffLimitExceeded" and code:
            reason = ""  # the manager says "exit code N"
        else:
            reason = f"{why}: {cond.get('message', '')}".rstrip(": ")
        return Polled("failed", code, reason, cond.get("lastTransitionTime"))
    if job["spec"].get("suspend"):
        return Polled("running", reason="waiting for Kueue admission", info={"kueue": "pending"})
    return Polled("running", info={"active": status.get("active", 0), "succeeded": status.get("succeeded", 0)})


# ---- the backend ----


def api_unreachable(error: BaseException) -> bool:
    """Whether an API call's error leaves it unknown if the request took effect (pure): no answer
    (a transport error, a timeout) or a server-side 5xx/429, not a refusal of the request."""
    if isinstance(error, KubeError):
        return error.status == 429 or error.status >= 500
    return isinstance(error, (aiohttp.ClientError, TimeoutError, OSError))


def no_answer(error: BaseException) -> str:
    return f"the Kubernetes API did not answer ({clip(str(error) or type(error).__name__, 300)})"


class KubeBackend(Backend):
    name = "kubernetes"
    idempotent_submit = True  # a Job of the same name and attempt is reused, its Secret applied again
    request_timeout = 30.0

    def __init__(self, data_dir: Path, settings: Any = None) -> None:
        super().__init__(data_dir, settings)
        section = (getattr(settings, "backends", None) or {}).get("kubernetes")
        extra = dict(getattr(section, "model_extra", None) or {})
        try:
            self.kube = KubeSettings.model_validate(extra)
        except ValidationError as e:
            raise ValueError(f"backends.kubernetes: {e}") from None
        self._api: Any = None
        self._api_lock = asyncio.Lock()
        self._ensured: set[str] = set()

    # -- HTTP --

    async def _client(self) -> Any:
        async with self._api_lock:
            if self._api is None:
                from kubernetes_asyncio import client, config

                cfg = client.Configuration()
                path = self.kube.kubeconfig or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
                if not path and os.environ.get("KUBERNETES_SERVICE_HOST"):
                    config.load_incluster_config(client_configuration=cfg)
                else:
                    await config.load_kube_config(
                        config_file=path or None, client_configuration=cfg, persist_config=False
                    )
                self._api = client.ApiClient(configuration=cfg)
        return self._api

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        content_type: str = "application/json",
        raw: bool = False,
    ) -> Any:
        api = await self._client()
        resp = await api.call_api(
            path,
            method,
            query_params=query or {},
            header_params={"Content-Type": content_type, "Accept": "application/json, */*"},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=self.request_timeout,
        )
        try:
            data = await resp.read()
        finally:
            resp.release()
        if resp.status >= 400:
            try:
                message = json.loads(data).get("message") or data.decode(errors="replace")
            except (ValueError, AttributeError):
                message = data.decode(errors="replace")
            raise KubeError(resp.status, message[:500])
        if raw:
            return data
        return json.loads(data) if data else {}

    async def _apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create, or merge-patch the existing object (409) with the manifest."""
        kind, meta = manifest["kind"], manifest["metadata"]
        try:
            return await self._call("POST", object_path(kind, meta.get("namespace")), manifest)
        except KubeError as e:
            if e.status != 409:
                raise
        return await self._call(
            "PATCH",
            object_path(kind, meta.get("namespace"), meta["name"]),
            manifest,
            content_type="application/merge-patch+json",
        )

    async def _get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return await self._call("GET", object_path(kind, namespace, name))
        except KubeError as e:
            if e.status == 404:
                return None
            raise

    async def _list(self, kind: str, namespace: str | None, selector: str) -> list[dict[str, Any]]:
        return list(
            (await self._call("GET", object_path(kind, namespace), query={"labelSelector": selector})).get("items")
            or []
        )

    async def _delete(
        self, kind: str, namespace: str, name: str, policy: str = "Foreground", uid: str | None = None
    ) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self._call("DELETE", object_path(kind, namespace, name), body, query={"propagationPolicy": policy})
        except KubeError as e:
            if e.status not in (404, 409):
                raise

    async def close(self) -> None:
        if self._api is not None:
            await self._api.close()
            self._api = None

    # -- submit --

    def namespace(self, vc: str) -> str:
        return f"{self.kube.namespace_prefix}{vc}"

    async def ensure_vc(self, vc: str, quota: dict[str, Any]) -> None:
        """The VC's namespace, flavors, ClusterQueue and LocalQueue, and the priority classes."""
        key = json.dumps([vc, quota], sort_keys=True)
        if key in self._ensured:
            return
        manifests = vc_queue_manifests(
            vc, quota, self.kube.cohort, default_flavors(self.devices), namespace_prefix=self.kube.namespace_prefix
        )
        fences = (
            []
            if self.kube.network_policy is None
            else vc_network_policies(vc, self.kube.network_policy.fence(), namespace_prefix=self.kube.namespace_prefix)
        )
        for manifest in manifests[:1] + fences + priority_class_manifests() + manifests[1:]:
            await self._apply(manifest)
        self._ensured.add(key)

    def image(self, launch: Launch) -> str | None:
        env = launch.spec.environment
        return env.image or (self.kube.images.get(env.kernel) if env.kernel else None)

    async def submit(self, launch: Launch) -> str:
        """Create the attempt's Job (its name and attempt label make a second submit reuse it); an
        API that does not answer in time is :class:`SubmissionUnknown`, not a failure."""
        try:
            return await self._submit(launch)
        except Exception as e:
            if api_unreachable(e):
                raise SubmissionUnknown(no_answer(e)) from None
            raise

    async def _submit(self, launch: Launch) -> str:
        spec, namespace = launch.spec, self.namespace(launch.spec.vc)
        service, job = job_manifests(
            spec,
            launch.job_id,
            namespace,
            spec.vc,
            image=self.image(launch),
            input_subpaths=input_subpaths(launch.input_paths, self.data_dir),
            data_volume=self.kube.data_volume,
            devices=self.devices,
            ttl_seconds_after_finished=self.kube.ttl_seconds_after_finished,
            run_as_user=self.kube.run_as_user,
            fs_group=self.kube.fs_group,
        )
        name = job["metadata"]["name"]
        ref = KubeRef(namespace, name, launch.attempt, spec.nodes)
        if launch.vc_quota is not None:
            await self.ensure_vc(spec.vc, launch.vc_quota)
        job, secret, service = attempt_manifests([service, job], launch.attempt, launch.env)
        old = await self._get("Job", namespace, name)
        if old is not None:
            if old["metadata"].get("labels", {}).get(ATTEMPT) == str(launch.attempt):
                # this attempt was created before (submitted again after a restart): reuse it, with
                # the new token for pods that have not started yet
                await self._apply(owned_by(secret, old))
                return str(ref)
            await self._delete("Job", namespace, name, uid=old["metadata"].get("uid"))
            await self._wait_gone(namespace, name)
        (launch.workdir / spec.outputs).mkdir(parents=True, exist_ok=True)
        created = await self._call("POST", object_path("Job", namespace), job)
        try:
            await self._apply(owned_by(secret, created))
            await self._apply(owned_by(service, created))
        except Exception:
            await self._delete("Job", namespace, name, uid=created["metadata"].get("uid"))
            raise
        return str(ref)

    async def _wait_gone(self, namespace: str, name: str) -> None:
        deadline = time.monotonic() + self.kube.delete_timeout
        while await self._get("Job", namespace, name) is not None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the previous attempt's Job {namespace}/{name} is still being deleted")
            await asyncio.sleep(0.5)

    async def adopt(self, job_id: int, attempt: int) -> str | None:
        selector = f"{MANAGED},yitong.io/job-id={job_id},{ATTEMPT}={attempt}"
        try:
            jobs = await self._list("Job", None, selector)
        except Exception as e:
            if api_unreachable(e):  # the manager looks again (and a submit would reuse a Job it finds)
                raise SubmissionUnknown(no_answer(e)) from None
            log.warning("cannot look for job %s attempt %s in Kubernetes: %s", job_id, attempt, e)
            return None
        for job in jobs:
            namespace = job["metadata"].get("namespace", "")
            if namespace.startswith(self.kube.namespace_prefix) and not job["metadata"].get("deletionTimestamp"):
                return str(
                    KubeRef(namespace, job["metadata"]["name"], attempt, int(job["spec"].get("completions") or 1))
                )
        return None

    # -- state --

    async def poll(self, ref: str) -> Polled:
        return (await self.poll_many([ref]))[ref]

    async def poll_many(self, refs: list[str]) -> dict[str, Polled]:
        by_ns: dict[str, list[KubeRef]] = {}
        out: dict[str, Polled] = {}
        for ref in refs:
            try:
                parsed = KubeRef.parse(ref)
            except ValueError:  # e.g. a local job left running when the backend was switched
                out[ref] = Polled("vanished", None, f"{ref!r} is not a Kubernetes job reference")
                continue
            by_ns.setdefault(parsed.namespace, []).append(parsed)
        for namespace, refs_here in by_ns.items():
            try:
                jobs = {j["metadata"]["name"]: j for j in await self._list("Job", namespace, MANAGED)}
                ended = [r for r in refs_here if r.name in jobs and _ended(jobs[r.name])]
                pods = await self._list("Pod", namespace, MANAGED) if ended else []
            except Exception as e:  # the API is unreachable: nothing is known, nothing ends
                log.warning("cannot list Jobs in %s: %s", namespace, e)
                out.update({str(r): Polled("running", reason=f"Kubernetes API: {e}") for r in refs_here})
                continue
            for r in refs_here:
                mine = [
                    p
                    for p in pods
                    if (p["metadata"].get("labels") or {}).get(JOB_NAME) == r.name
                    and (p["metadata"].get("labels") or {}).get(ATTEMPT) == str(r.attempt)
                ]
                out[str(r)] = job_polled(jobs.get(r.name), mine, r)
        return out

    async def cancel(self, ref: str) -> None:
        r = KubeRef.parse(ref)
        job = await self._get("Job", r.namespace, r.name)
        if job is None or job["metadata"].get("labels", {}).get(ATTEMPT) != str(r.attempt):
            return
        await self._delete("Job", r.namespace, r.name, "Foreground", uid=job["metadata"].get("uid"))

    # -- logs --

    async def _pods(self, r: KubeRef) -> dict[int, dict[str, Any]]:
        return newest_per_index(await self._list("Pod", r.namespace, f"{JOB_NAME}={r.name},{ATTEMPT}={r.attempt}"))

    async def ranks(self, ref: str) -> list[int]:
        try:
            return sorted(await self._pods(KubeRef.parse(ref)))
        except Exception as e:  # the job detail still answers while the API is unreachable
            log.warning("cannot list the pods of %s: %s", ref, e)
            return []

    async def read_log(self, ref: str, rank: int, offset: int = 0) -> bytes:
        """Up to 1 MiB of the log of the pod with completion index ``rank``, from byte ``offset``
        (the log API has no offset: ``limitBytes`` = offset + 1 MiB, the head is cut off here)."""
        r = KubeRef.parse(ref)
        try:
            pod = (await self._pods(r)).get(rank)
            if pod is None:
                return b""
            path = f"{object_path('Pod', r.namespace, pod['metadata']['name'])}/log"
            data = await self._call(
                "GET", path, query={"container": "main", "limitBytes": offset + LOG_CHUNK}, raw=True
            )
        except KubeError as e:
            if e.status in (400, 404):  # not started yet, or gone
                return b""
            raise
        except aiohttp.ClientError as e:
            log.warning("cannot read the log of %s rank %s: %s", ref, rank, e)
            return b""
        return data[offset:]

    def describe(self, ref: str) -> dict[str, Any]:
        r = KubeRef.parse(ref)
        return {
            "hosts": [f"{r.name}-{i}.{r.name}" for i in range(r.nodes)],
            "ports": {"rdzv": RDZV_PORT},
            "access": (
                f"Kubernetes Job {r.name} in namespace {r.namespace}: "
                f"kubectl -n {r.namespace} get pods -l {JOB_NAME}={r.name}, then "
                f"kubectl -n {r.namespace} exec -it <pod> -- bash"
            ),
        }


def _ended(job: dict[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )
