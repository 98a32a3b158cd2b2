"""Endpoints on Kubernetes: a KServe ``InferenceService`` (serving.kserve.io/v1beta1), built from
plain values (pure; tests validate it against KServe's own CRD schema).

The predictor serves the model over the V2 protocol (``protocolVersion: v2``: MLServer for
sklearn, XGBoost and LightGBM, Triton for ONNX, as KServe picks the runtime for the format). Its
resources are the profile's, an accelerator mapped through the VC's device table (the resource
name, node selector and tolerations jobs get); its pod runs as a non-root user without the
service account token, like a job's. A canary is KServe's own: ``canaryTrafficPercent`` sends
that share to the latest revision and the rest to the previous one; without it, an update rolls
the predictor to a new revision that takes the traffic once ready (KServe keeps the old one
answering until then). Status comes back through :func:`status`.

Queued by Kueue (``queue``, the VC's LocalQueue): Kueue has no KServe integration
(kubernetes-sigs/kueue#1603), but it admits a Deployment's pods one by one through its pod
integration. So the InferenceService asks for KServe's ``RawDeployment`` mode (a plain
Deployment, no Knative revisions) and gives the predictor the label
``kueue.x-k8s.io/queue-name: <queue>``; KServe copies a component's ``labels`` onto its
Deployment and the Deployment's pods, and Kueue's webhook gates each such pod
(``schedulingGates: [kueue.x-k8s.io/admission]``) until the VC's ClusterQueue admits it, which
holds the pod's requests (the profile's resources) under the VC's quota. One replica
(``minReplicas`` = ``maxReplicas`` = 1): one Kueue workload per endpoint; a roll surges one new
pod and keeps the old one until the new one is ready (``maxUnavailable: 0``). A canary split is
Knative's (``canaryTrafficPercent``), so it is refused in this mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..jobs.kube import BuildError, pod_security
from ..vcs.devices import DEVICES, DeviceMap
from ..vcs.quantities import format_amount

API_VERSION = "serving.kserve.io/v1beta1"
DEPLOYMENT_MODE = "serving.kserve.io/deploymentMode"
#: KServe's name of a plain-Deployment predictor ("Standard" since 0.15 reads it the same way)
RAW_DEPLOYMENT = "RawDeployment"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_GATE = "kueue.x-k8s.io/admission"
#: the label KServe puts on every pod of an InferenceService
ISVC_POD_LABEL = "serving.kserve.io/inferenceservice"
WAITING = "waiting for Kueue admission"
NO_CANARY = (
    "endpoints queued by Kueue run in KServe's RawDeployment mode, which has no canary share:"
    " deploy the version without traffic (it rolls once its pod is admitted and ready)"
)
#: framework (as registered) -> KServe model format
MODEL_FORMATS = {
    "sklearn": "sklearn",
    "scikit-learn": "sklearn",
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "onnx": "onnx",
}


def model_format(framework: str) -> str:
    found = MODEL_FORMATS.get(framework.lower())
    if found is None:
        known = ", ".join(sorted(set(MODEL_FORMATS.values())))
        raise BuildError(f"framework {framework or '(none)'} has no KServe model format here; endpoints serve {known}")
    return found


def storage_uri(data_volume: Mapping[str, Any], subpath: str) -> str:
    """Where the predictor's storage initializer finds the model: ``pvc://<claim>/<subpath>`` of
    the data volume (KServe reads a PersistentVolumeClaim or an object store, not a hostPath)."""
    claim = (data_volume.get("persistentVolumeClaim") or {}).get("claimName")
    if not claim:
        raise BuildError(
            "KServe reads models from a PersistentVolumeClaim: set backends.kubernetes.data_volume"
            " to a persistentVolumeClaim volume source"
        )
    if subpath.startswith("/") or ".." in subpath.split("/"):
        raise BuildError(f"model path {subpath!r} must be relative to the data volume")
    return f"pvc://{claim}/{subpath}"


def inference_service(
    *,
    name: str,
    namespace: str,
    vc: str,
    framework: str,
    uri: str,
    version: int,
    cpu: float,
    memory: int,
    accelerator: Mapping[str, Any] | None = None,
    devices: Mapping[str, DeviceMap] = DEVICES,
    canary_percent: int | None = None,
    run_as_user: int = 1000,
    queue: str | None = None,
) -> dict[str, Any]:
    """The InferenceService of endpoint ``name`` serving ``version`` (files at ``uri``); with
    ``canary_percent`` (1-99) that share goes to this version, the rest to the previous revision;
    with ``queue`` its predictor's pods are Kueue workloads of that LocalQueue (RawDeployment)."""
    if canary_percent is not None and not 1 <= canary_percent <= 99:
        raise BuildError(f"a canary takes 1 to 99 percent of the traffic, not {canary_percent}")
    if canary_percent is not None and queue is not None:
        raise BuildError(NO_CANARY)
    amounts = {"cpu": format_amount("cpu", cpu), "memory": format_amount("memory", memory)}
    pod_context, container_context = pod_security(run_as_user, None)
    predictor: dict[str, Any] = {"minReplicas": 1}
    if queue is not None:
        predictor["maxReplicas"] = 1
        # a roll starts the new pod (which queues) before the old one goes
        predictor["deploymentStrategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
        }
        predictor["labels"] = {QUEUE_LABEL: queue}
    predictor |= {
        "automountServiceAccountToken": False,
        "securityContext": pod_context,
    }
    if accelerator:
        kind, count = str(accelerator["type"]), int(accelerator["count"])
        dev = devices.get(kind)
        if dev is None:
            raise BuildError(f"accelerator {kind} is not in this cluster's device table")
        amounts[dev.type] = str(count)
        if dev.node_selector:
            predictor["nodeSelector"] = dict(dev.node_selector)
        if dev.tolerations:
            predictor["tolerations"] = dev.toleration_manifests()
    if canary_percent is not None:
        predictor["canaryTrafficPercent"] = canary_percent
    predictor["model"] = {
        "modelFormat": {"name": model_format(framework)},
        "protocolVersion": "v2",
        "storageUri": uri,
        "resources": {"limits": dict(amounts), "requests": dict(amounts)},
        "securityContext": container_context,
    }
    labels = {"app.kubernetes.io/managed-by": "yitong", "yitong.io/endpoint": name, "yitong.io/vc": vc}
    annotations = {"yitong.io/model-version": str(version)}
    if queue is not None:
        annotations[DEPLOYMENT_MODE] = RAW_DEPLOYMENT
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceService",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"predictor": predictor},
    }


def merge_patch(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as a JSON merge patch of the live object: a field the build left out (a
    canary share after a promotion) is removed with an explicit ``null``."""
    patch = {**manifest, "spec": {"predictor": {**manifest["spec"]["predictor"]}}}
    patch["spec"]["predictor"].setdefault("canaryTrafficPercent", None)
    return patch


def gated(pods: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a pod (not being deleted) still carries Kueue's admission gate."""
    return any(
        not (p.get("metadata") or {}).get("deletionTimestamp")
        and any(g.get("name") == KUEUE_GATE for g in (p.get("spec") or {}).get("schedulingGates") or [])
        for p in pods
    )


def status(obj: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """``{state, reason, url, address, traffic}`` of a live InferenceService (``address``: its
    cluster-local URL; ``traffic``: ``latest`` and ``previous`` percent from the predictor's
    component status). ``pods``: its pods; one still gated by Kueue makes a service that is not
    ready ``queued`` ("waiting for Kueue admission"), and a ready one says a roll waits for it."""
    if obj is None:
        return {"state": "failed", "reason": "the InferenceService is gone", "url": "", "address": "", "traffic": {}}
    st = obj.get("status") or {}
    ready = next((c for c in st.get("conditions") or [] if c.get("type") == "Ready"), None)
    traffic: dict[str, int] = {}
    for t in ((st.get("components") or {}).get("predictor") or {}).get("traffic") or []:
        key = "latest" if t.get("latestRevision") else "previous"
        traffic[key] = traffic.get(key, 0) + int(t.get("percent") or 0)
    generation = (obj.get("metadata") or {}).get("generation")
    current = st.get("observedGeneration") == generation if generation is not None else True
    if ready is not None and ready.get("status") == "True" and current:
        state, reason = "ready", ""
    elif ready is not None and ready.get("status") == "False":
        state, reason = "starting", ready.get("message") or ready.get("reason") or ""
    else:
        state, reason = "starting", ""
    if gated(pods):
        if state == "ready":
            reason = f"a new pod is {WAITING}"
        else:
            state, reason = "queued", WAITING
    address = (st.get("address") or {}).get("url") or ""
    return {"state": state, "reason": reason, "url": st.get("url") or "", "address": address, "traffic": traffic}
