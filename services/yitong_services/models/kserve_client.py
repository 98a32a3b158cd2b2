"""Endpoints' InferenceServices on a cluster (I/O): deploy (create, or merge-patch the live one:
a new version rolls, a canary share splits), read the status, delete. It speaks through the
Kubernetes job backend's API client (its kubeconfig, timeouts and error sentences), into the
VC's namespace; the manifests come from :mod:`.kserve`.

With ``backends.kubernetes.queue_endpoints`` (the default) the predictor's pods are Kueue
workloads of the VC's LocalQueue ``<vc>`` (the queue jobs use), and reading an endpoint also
lists its pods to tell a pod gated by Kueue ("waiting for Kueue admission")."""

from __future__ import annotations

from typing import Any

from ..jobs.runner_kube import KubeBackend, KubeError, object_path
from . import kserve

KIND = "InferenceService"


class KServeEndpoints:
    def __init__(self, backend: KubeBackend) -> None:
        self.backend = backend

    def namespace(self, vc: str) -> str:
        return self.backend.namespace(vc)

    def manifest(
        self,
        *,
        name: str,
        vc: str,
        framework: str,
        subpath: str,
        version: int,
        cpu: float,
        memory: int,
        accelerator: dict[str, Any] | None = None,
        canary_percent: int | None = None,
    ) -> dict[str, Any]:
        """The endpoint's InferenceService, from the settings of the cluster (data volume, device
        table, pod user, whether Kueue queues it) and the endpoint's values."""
        return kserve.inference_service(
            name=name,
            namespace=self.namespace(vc),
            vc=vc,
            framework=framework,
            uri=kserve.storage_uri(self.backend.kube.data_volume, subpath),
            version=version,
            cpu=cpu,
            memory=memory,
            accelerator=accelerator,
            devices=self.backend.devices,
            canary_percent=canary_percent,
            run_as_user=self.backend.kube.run_as_user,
            queue=vc if self.queued else None,
        )

    @property
    def queued(self) -> bool:
        """Whether endpoints' pods queue in their VC's Kueue LocalQueue (named like the VC, as jobs')."""
        return bool(self.backend.kube.queue_endpoints)

    async def ensure_queue(self, vc: str, quota: dict[str, Any] | None) -> None:
        """The VC's namespace and Kueue objects, as a job's submit makes them (nothing without a quota)."""
        if self.queued and quota is not None:
            await self.backend.ensure_vc(vc, quota)

    async def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create the InferenceService, or merge-patch the live one (a field left out is removed)."""
        meta = manifest["metadata"]
        try:
            return await self.backend._call("POST", _path(meta["namespace"]), manifest)
        except KubeError as e:
            if e.status != 409:
                raise
        return await self.backend._call(
            "PATCH",
            _path(meta["namespace"], meta["name"]),
            kserve.merge_patch(manifest),
            content_type="application/merge-patch+json",
        )

    async def read(self, vc: str, name: str) -> dict[str, Any]:
        """The live status; for a queued one, with its pods (one gated by Kueue: queued)."""
        obj = await self.backend._get(KIND, self.namespace(vc), name)
        pods: list[dict[str, Any]] = []
        labels = (((obj or {}).get("spec") or {}).get("predictor") or {}).get("labels") or {}
        if kserve.QUEUE_LABEL in labels:
            pods = await self.backend._list("Pod", self.namespace(vc), f"{kserve.ISVC_POD_LABEL}={name}")
        return kserve.status(obj, pods)

    async def delete(self, vc: str, name: str) -> None:
        await self.backend._delete(KIND, self.namespace(vc), name, policy="Background")


def _path(namespace: str, name: str | None = None) -> str:
    return object_path(KIND, namespace, name)
