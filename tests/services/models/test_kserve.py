"""Endpoints on Kubernetes: the KServe InferenceService builder (models/kserve.py) against dict
literals and against KServe's own CRD schema, and the client (models/kserve_client.py) driven
against the kmock emulator.

KServe and its controller cannot run here (they are the system boundary): the schema is the
``openAPIV3Schema`` of ``inferenceservices.serving.kserve.io`` v1beta1 vendored from
kserve/kserve (``tests/fixtures/kserve/``, its commit in the file's ``$comment``), made strict
as ``kubectl --validate=strict`` is (an unknown field is an error); the controller is a stand-in
below that gives each new spec a revision and reports Ready and the traffic split from
``canaryTrafficPercent`` as KServe's status does. The pod KServe makes of the predictor (its
pod-level fields and the model container's) is validated strictly by kubernetes-validate, as
every core manifest of the job backend is.

Queued by Kueue (RawDeployment mode, the predictor labelled with the VC's LocalQueue): Kueue's
pod webhook and scheduler cannot run in kmock either, so ``KueuePodStandIn`` below does what
Kueue's pod integration does to a pod labelled ``kueue.x-k8s.io/queue-name``: gates it at
creation (``schedulingGates: [kueue.x-k8s.io/admission]``) and removes the gate once the
ClusterQueue's ``nominalQuota`` covers its requests plus the admitted pods' (the job stand-in's
rule); and the KServe stand-in makes the pod a RawDeployment would (the InferenceService's and
the predictor's labels, KServe's ``serving.kserve.io/inferenceservice``), Ready only once it
is admitted. The manifests and the reason mapping are what is asserted; the gating is theirs.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import kmock
import kubernetes_validate
import pytest

from tests.services.jobs.kube_cluster import FakeCluster, KueueStandIn, parse_amount
from yitong_services.core.settings import Settings
from yitong_services.jobs.devices import BuildError
from yitong_services.jobs.runner_kube import KubeBackend
from yitong_services.models import kserve
from yitong_services.models.kserve_client import KServeEndpoints

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "kserve" / "inferenceservice-v1beta1.schema.json"
K8S_VERSIONS = ("1.33", "1.37")
ISVC = "/apis/serving.kserve.io/v1beta1"


def strict(schema: Any) -> Any:
    """Unknown fields refused wherever the CRD lists the fields (and does not keep unknown ones)."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    return schema


VALIDATOR = jsonschema.Draft7Validator(strict(json.loads(SCHEMA_FILE.read_text())))


def assert_isvc_valid(manifest: dict[str, Any]) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(manifest)]
    assert errors == [], errors


def predictor_pod(manifest: dict[str, Any]) -> dict[str, Any]:
    """The pod KServe makes of the predictor: its pod-level fields, and the model's container
    fields in the ``kserve-container`` (the image and the command are KServe's runtime's)."""
    predictor = dict(manifest["spec"]["predictor"])
    model = predictor.pop("model")
    for kserve_only in ("minReplicas", "maxReplicas", "canaryTrafficPercent", "deploymentStrategy"):
        predictor.pop(kserve_only, None)
    container = {k: v for k, v in model.items() if k not in ("modelFormat", "protocolVersion", "storageUri", "runtime")}
    meta = manifest["metadata"]
    # KServe's labels of a component's pods: the InferenceService's, the component's, its own
    labels = {
        **meta["labels"],
        **predictor.pop("labels", {}),
        kserve.ISVC_POD_LABEL: meta["name"],
        "component": "predictor",
    }
    annotations = predictor.pop("annotations", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-predictor",
            "namespace": meta["namespace"],
            "labels": labels,
            **({"annotations": annotations} if annotations else {}),
        },
        "spec": {**predictor, "containers": [{"name": "kserve-container", "image": "kserve/runtime", **container}]},
    }


def assert_valid(manifest: dict[str, Any]) -> None:
    assert_isvc_valid(manifest)
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(predictor_pod(manifest), version, strict=True)


def build(**kw: Any) -> dict[str, Any]:
    values = {
        "name": "iris",
        "namespace": "yitong-vision",
        "vc": "vision",
        "framework": "sklearn",
        "uri": "pvc://yitong-data/endpoints/iris/v1/model",
        "version": 1,
        "cpu": 1,
        "memory": 2 << 30,
    }
    return kserve.inference_service(**(values | kw))


def test_inference_service_literal():
    assert build() == {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": "iris",
            "namespace": "yitong-vision",
            "labels": {
                "app.kubernetes.io/managed-by": "yitong",
                "yitong.io/endpoint": "iris",
                "yitong.io/vc": "vision",
            },
            "annotations": {"yitong.io/model-version": "1"},
        },
        "spec": {
            "predictor": {
                "minReplicas": 1,
                "automountServiceAccountToken": False,
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 1000,
                    "runAsGroup": 1000,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "model": {
                    "modelFormat": {"name": "sklearn"},
                    "protocolVersion": "v2",
                    "storageUri": "pvc://yitong-data/endpoints/iris/v1/model",
                    "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                        "runAsNonRoot": True,
                    },
                },
            }
        },
    }


@pytest.mark.parametrize(
    ("framework", "expected"),
    [
        ("sklearn", "sklearn"),
        ("scikit-learn", "sklearn"),
        ("XGBoost", "xgboost"),
        ("lightgbm", "lightgbm"),
        ("onnx", "onnx"),
    ],
)
@pytest.mark.parametrize(
    "accelerator", [None, {"type": "nvidia.com/gpu", "count": 2}, {"type": "huawei.com/Ascend910", "count": 1}]
)
@pytest.mark.parametrize("canary", [None, 10])
def test_every_format_device_and_canary_validates(framework, expected, accelerator, canary):
    m = build(framework=framework, accelerator=accelerator, canary_percent=canary)
    assert m["spec"]["predictor"]["model"]["modelFormat"] == {"name": expected}
    assert m["spec"]["predictor"].get("canaryTrafficPercent") == canary
    if accelerator:
        kind = accelerator["type"]
        assert m["spec"]["predictor"]["model"]["resources"]["limits"][kind] == str(accelerator["count"])
        assert m["spec"]["predictor"]["tolerations"][0]["key"] == kind  # from the device table
        assert m["spec"]["predictor"]["nodeSelector"]
    assert_valid(m)


def test_the_schema_refuses_what_kserve_would():
    """The strict schema bites: a misspelled field, a wrong type, a missing model format."""
    m = build(canary_percent=10)
    bad = copy.deepcopy(m)
    bad["spec"]["predictor"]["canaryTrafficPercentage"] = 10
    assert "canaryTrafficPercentage" in str([e.message for e in VALIDATOR.iter_errors(bad)])
    bad = copy.deepcopy(m)
    bad["spec"]["predictor"]["minReplicas"] = "one"
    assert list(VALIDATOR.iter_errors(bad))
    bad = copy.deepcopy(m)
    del bad["spec"]["predictor"]
    assert list(VALIDATOR.iter_errors(bad))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"framework": "pytorch"}, "framework pytorch has no KServe model format here"),
        ({"canary_percent": 100}, "a canary takes 1 to 99 percent of the traffic, not 100"),
        ({"accelerator": {"type": "example.com/tpu", "count": 1}}, "accelerator example.com/tpu is not in"),
    ],
)
def test_refusals(kw, message):
    with pytest.raises(BuildError, match=message):
        build(**kw)


@pytest.mark.parametrize(
    ("volume", "expected"),
    [
        (
            {"persistentVolumeClaim": {"claimName": "yitong-data"}},
            "pvc://yitong-data/endpoints/iris/v1-ab/model/m.joblib",
        ),
        ({"hostPath": {"path": "/srv/yitong"}}, None),
    ],
)
def test_storage_uri(volume, expected):
    if expected is None:
        with pytest.raises(BuildError, match="PersistentVolumeClaim"):
            kserve.storage_uri(volume, "endpoints/iris/v1-ab/model/m.joblib")
    else:
        assert kserve.storage_uri(volume, "endpoints/iris/v1-ab/model/m.joblib") == expected


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (None, ("failed", {})),
        ({"metadata": {"generation": 1}, "status": {}}, ("starting", {})),
        (
            {
                "metadata": {"generation": 2},
                "status": {
                    "observedGeneration": 2,
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "components": {
                        "predictor": {
                            "traffic": [
                                {"revisionName": "r1", "percent": 90, "tag": "prev"},
                                {"revisionName": "r2", "percent": 10, "latestRevision": True},
                            ]
                        }
                    },
                },
            },
            ("ready", {"previous": 90, "latest": 10}),
        ),
        (
            {
                "metadata": {"generation": 3},
                "status": {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}]},
            },
            ("starting", {}),  # the controller has not seen the newest spec yet
        ),
    ],
)
def test_status(obj, expected):
    got = kserve.status(obj)
    assert (got["state"], got["traffic"]) == expected


# ---- against the emulator ----


class KServeStandIn:
    """KServe's controller, level-triggered over the emulator's HTTP API: a spec it has not seen
    is a new revision; Ready with a URL, and the predictor's traffic: ``canaryTrafficPercent`` to
    the latest revision and the rest to the previous ready one, else all to the latest."""

    def __init__(self, api) -> None:
        self.api = api
        self.seen: dict[str, tuple[str, list[str]]] = {}  # name -> (spec json, revisions)

    async def step(self) -> None:
        for obj in await self.api.items(f"{ISVC}/inferenceservices"):
            meta = obj["metadata"]
            if (meta.get("annotations") or {}).get(kserve.DEPLOYMENT_MODE) == kserve.RAW_DEPLOYMENT:
                await self.raw(obj)
                continue
            spec = json.dumps(obj["spec"], sort_keys=True)
            last, revisions = self.seen.get(meta["name"], ("", []))
            if spec == last:
                continue
            revisions = [*revisions, f"{meta['name']}-predictor-{len(revisions) + 1:05d}"]
            self.seen[meta["name"]] = (spec, revisions)
            canary = obj["spec"]["predictor"].get("canaryTrafficPercent")
            if canary is not None and len(revisions) > 1:
                traffic = [
                    {"revisionName": revisions[-2], "percent": 100 - canary, "tag": "prev"},
                    {"revisionName": revisions[-1], "percent": canary, "latestRevision": True},
                ]
            else:
                traffic = [{"revisionName": revisions[-1], "percent": 100, "latestRevision": True}]
            status = {
                "url": f"http://{meta['name']}.{meta['namespace']}.example.com",
                "conditions": [{"type": "Ready", "status": "True"}],
                "components": {"predictor": {"traffic": traffic}},
                "address": {"url": f"http://{meta['name']}-predictor.{meta['namespace']}.svc.cluster.local"},
            }
            if "generation" in meta:
                status["observedGeneration"] = meta["generation"]
            await self.api.patch(
                f"{ISVC}/namespaces/{meta['namespace']}/inferenceservices/{meta['name']}", {"status": status}
            )

    async def raw(self, obj: dict[str, Any]) -> None:
        """RawDeployment: the Deployment's pod for the current spec (``<name>-predictor-<n>``,
        with what Kueue's pod webhook adds to a pod labelled with a queue); once it is admitted
        (not gated) the older pods go and the service is Ready with all traffic on it."""
        meta = obj["metadata"]
        ns, name = meta["namespace"], meta["name"]
        spec = json.dumps(obj["spec"], sort_keys=True)
        last, revisions = self.seen.get(name, ("", []))
        if spec != last:
            revisions = [*revisions, f"{name}-predictor-{len(revisions) + 1:05d}"]
            self.seen[name] = (spec, revisions)
            pod = predictor_pod(obj)
            pod["metadata"]["name"] = revisions[-1]
            KueuePodStandIn.webhook(pod)
            await self.api.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)
        pods = {
            p["metadata"]["name"]: p for p in await self.api.items("/api/v1/pods", f"{kserve.ISVC_POD_LABEL}={name}")
        }
        current = pods.get(revisions[-1])
        admitted = current is not None and not kserve.gated([current])
        if admitted:
            for old in set(pods) - {revisions[-1]}:
                await self.api.delete(f"/api/v1/namespaces/{ns}/pods/{old}")
        ready = {"type": "Ready", "status": "True"} if admitted else {"type": "Ready", "status": "False"}
        status: dict[str, Any] = {"conditions": [ready]}
        if admitted:
            status |= {
                "url": f"http://{name}-{ns}.example.com",
                "components": {"predictor": {"traffic": [{"percent": 100, "latestRevision": True}]}},
                "address": {"url": f"http://{name}-predictor.{ns}.svc.cluster.local"},
            }
        if "generation" in meta:
            status["observedGeneration"] = meta["generation"]
        if status != obj.get("status"):
            await self.api.patch(f"{ISVC}/namespaces/{ns}/inferenceservices/{name}", {"status": status})


class KueuePodStandIn:
    """Kueue's pod integration on the emulator: ``webhook`` gates a pod labelled with a queue (as
    Kueue's mutating webhook does at creation); ``step`` removes the gate of the oldest gated pod
    whose ClusterQueue's quota covers it besides the pods already admitted (KueueStandIn's rule)."""

    def __init__(self, api) -> None:
        self.api = api

    @staticmethod
    def webhook(pod: dict[str, Any]) -> None:
        if kserve.QUEUE_LABEL in pod["metadata"].get("labels", {}):
            pod["metadata"]["labels"]["kueue.x-k8s.io/managed"] = "true"
            pod["spec"]["schedulingGates"] = [{"name": kserve.KUEUE_GATE}]

    async def step(self) -> None:
        pods = await self.api.items("/api/v1/pods", "kueue.x-k8s.io/managed=true")
        queues = {
            (q["metadata"]["namespace"], q["metadata"]["name"]): q
            for q in await self.api.items("/apis/kueue.x-k8s.io/v1beta1/localqueues")
        }
        cqs = {c["metadata"]["name"]: c for c in await self.api.items("/apis/kueue.x-k8s.io/v1beta1/clusterqueues")}
        held: dict[str, dict[str, float]] = {}

        def as_job(pod: dict[str, Any]) -> dict[str, Any]:
            return {"metadata": pod["metadata"], "spec": {"template": {"spec": pod["spec"]}}}

        for pod in pods:
            if not kserve.gated([pod]) and not pod["metadata"].get("deletionTimestamp"):
                lq = queues.get((pod["metadata"]["namespace"], pod["metadata"]["labels"][kserve.QUEUE_LABEL]))
                usage = held.setdefault(lq["spec"]["clusterQueue"] if lq else "", {})
                for c in pod["spec"]["containers"]:
                    for r, v in ((c.get("resources") or {}).get("requests") or {}).items():
                        usage[r] = usage.get(r, 0) + parse_amount(r, v)
        for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
            if not kserve.gated([pod]):
                continue
            meta = pod["metadata"]
            lq = queues.get((meta["namespace"], meta["labels"][kserve.QUEUE_LABEL]))
            cq = cqs.get(lq["spec"]["clusterQueue"]) if lq else None
            usage = held.setdefault(cq["metadata"]["name"] if cq else "", {})
            if KueueStandIn.why_not(as_job(pod), lq, cq, set(), usage):
                continue
            for c in pod["spec"]["containers"]:
                for r, v in ((c.get("resources") or {}).get("requests") or {}).items():
                    usage[r] = usage.get(r, 0) + parse_amount(r, v)
            gates = [g for g in pod["spec"]["schedulingGates"] if g["name"] != kserve.KUEUE_GATE]
            await self.api.patch(
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                {"spec": {"schedulingGates": gates or None}},
            )


@pytest.fixture
async def cluster(tmp_path, monkeypatch):
    c = await FakeCluster(tmp_path / "cluster").start()
    c.emulator.resources["serving.kserve.io/v1beta1/inferenceservices"] = kmock.ResourceInfo(
        namespaced=True, kind="InferenceService"
    )
    monkeypatch.setenv("KUBECONFIG", str(c.kubeconfig))
    kserve_controller, kueue_pods = KServeStandIn(c.api), KueuePodStandIn(c.api)

    async def loop() -> None:
        while True:
            await kserve_controller.step()
            await kueue_pods.step()
            await asyncio.sleep(0.1)

    task = asyncio.create_task(loop())
    yield c
    task.cancel()
    await c.stop()


async def wait_traffic(client: KServeEndpoints, expected: dict[str, int], timeout: float = 10) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = await client.read("vision", "iris")
        if got["state"] == "ready" and got["traffic"] == expected:
            return got
        assert asyncio.get_running_loop().time() < deadline, got
        await asyncio.sleep(0.1)


async def test_deploy_roll_canary_and_delete_against_the_emulator(cluster, tmp_path):
    settings = Settings.model_validate(
        {
            "backend": "kubernetes",
            "backends": {
                "kubernetes": {
                    "data_volume": {"persistentVolumeClaim": {"claimName": "yitong-data"}},
                    "queue_endpoints": False,  # KServe's default mode (Knative revisions, canaries)
                }
            },
        }
    )
    backend = KubeBackend(tmp_path, settings)
    client = KServeEndpoints(backend)
    try:
        values = {"name": "iris", "vc": "vision", "framework": "sklearn", "cpu": 1, "memory": 2 << 30}
        v1 = client.manifest(**values, subpath="endpoints/iris/v1/model/model.joblib", version=1)
        await client.apply(v1)
        got = await wait_traffic(client, {"latest": 100})
        assert got["url"] == "http://iris.yitong-vision.example.com"
        # a canary: v2 takes 10%, the previous revision (v1) the rest
        v2 = client.manifest(**values, subpath="endpoints/iris/v2/model/model.joblib", version=2, canary_percent=10)
        await client.apply(v2)
        await wait_traffic(client, {"previous": 90, "latest": 10})
        # promoted: the canary share is removed from the live object, all traffic to v2
        await client.apply(client.manifest(**values, subpath="endpoints/iris/v2/model/model.joblib", version=2))
        await wait_traffic(client, {"latest": 100})
        [live] = cluster.objects("inferenceservices", "yitong-vision")
        assert "canaryTrafficPercent" not in live["spec"]["predictor"]
        assert (
            live["spec"]["predictor"]["model"]["storageUri"] == "pvc://yitong-data/endpoints/iris/v2/model/model.joblib"
        )
        await client.delete("vision", "iris")
        assert cluster.objects("inferenceservices") == []
        assert (await client.read("vision", "iris"))["state"] == "failed"
    finally:
        await backend.close()
    # every object the client sent: the CRD's schema, and the predictor's pod strictly
    sent = [m for m in cluster.sent if m["kind"] == "InferenceService"]
    assert len(sent) >= 3
    for manifest in sent:
        assert_valid(
            {
                **manifest,
                "spec": {"predictor": {k: v for k, v in manifest["spec"]["predictor"].items() if v is not None}},
            }
        )
    assert [m for m in cluster.sent if m["kind"] != "InferenceService"] == []


async def test_the_service_on_kubernetes_serves_endpoints_as_inference_services(service_factory, cluster, tmp_path):
    """Through the service's routes (``backend: kubernetes``): create, ready, a 10% canary,
    promotion and delete become the InferenceService's create, status and patches."""
    settings = {
        "backend": "kubernetes",
        "jobs": {"poll_interval": 0.1},
        "backends": {
            "kubernetes": {
                "inventory": {"nvidia.com/gpu": 4},
                "images": {"python3": "python:3.12-slim"},
                "data_volume": {"persistentVolumeClaim": {"claimName": "yitong-data"}},
                "queue_endpoints": False,
            }
        },
    }
    async with service_factory(**settings) as svc:
        r = await svc.call("alice", "POST", "models", json={"vc": "vision", "name": "iris"})
        assert r.status_code == 201, r.text
        for i in (1, 2):
            blob = bytes([i]) * 64
            await svc.data.upload("alice", [blob])
            body = {"files": svc.data.entries({"model.joblib": blob}), "framework": "sklearn", "format": "joblib"}
            r = await svc.call("alice", "POST", "models/vision/iris/versions", json=body)
            assert r.status_code == 201, r.text

        async def wait(expected: dict[str, int]) -> dict[str, Any]:
            for _ in range(100):
                e = (await svc.call("alice", "GET", "endpoints/iris")).json()
                if e["state"] == "ready" and e["traffic"] == expected:
                    return e
                await asyncio.sleep(0.1)
            raise AssertionError(e)

        body = {"name": "iris", "model": "vision/iris@1", "profile": "cpu-small"}
        r = await svc.call("alice", "POST", "endpoints", json=body)
        assert r.status_code == 201 and r.json()["state"] == "starting", r.text
        [isvc] = cluster.objects("inferenceservices", "yitong-vision")
        uri = isvc["spec"]["predictor"]["model"]["storageUri"]
        assert uri.startswith("pvc://yitong-data/endpoints/iris/v1-") and uri.endswith("/model/model.joblib"), uri
        assert isvc["spec"]["predictor"]["model"]["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
        await wait({"v1": 100})
        r = await svc.call(
            "alice", "POST", "endpoints/iris/deploy", json={"model": "vision/iris@2", "traffic": {"v2": 10}}
        )
        assert r.status_code == 200, r.text
        await wait({"v1": 90, "v2": 10})
        r = await svc.call("alice", "POST", "endpoints/iris/deploy", json={"model": "vision/iris@2"})
        assert r.status_code == 200, r.text
        e = await wait({"v2": 100})
        assert e["version"] == 2
        r = await svc.call("bob", "POST", "endpoints/iris/deploy", json={"model": "vision/iris@1"})
        assert r.status_code == 404 and r.json()["detail"] == "there is no endpoint iris"
        # one InferenceService: replicas other than 1 are refused with a sentence, never a 500
        one = "on Kubernetes an endpoint is one KServe InferenceService; replicas other than 1 are not offered"
        r = await svc.call("alice", "POST", "endpoints/iris/scale", json={"replicas": 2})
        assert (r.status_code, r.json()["detail"]) == (422, one)
        r = await svc.call("alice", "POST", "endpoints/iris/deploy", json={"model": "vision/iris@2", "replicas": 3})
        assert (r.status_code, r.json()["detail"]) == (422, one)
        assert (await svc.call("alice", "DELETE", "endpoints/iris")).status_code == 204
        assert cluster.objects("inferenceservices") == []
        assert (await svc.call("alice", "GET", "endpoints/iris")).status_code == 404
    sent = [m for m in cluster.sent if m["kind"] == "InferenceService"]
    assert len(sent) == 5  # the create; each deploy's create (409: it exists) and merge patch
    for manifest in sent:
        predictor = {k: v for k, v in manifest["spec"]["predictor"].items() if v is not None}
        assert_valid({**manifest, "spec": {"predictor": predictor}})


# ---- queued by Kueue (RawDeployment, the VC's LocalQueue) ----


@pytest.mark.parametrize(
    "accelerator", [None, {"type": "nvidia.com/gpu", "count": 1}, {"type": "huawei.com/Ascend910", "count": 1}]
)
def test_a_queued_inference_service_makes_its_predictor_pods_kueue_workloads(accelerator):
    """What differs from KServe's default mode: RawDeployment, one replica, the queue label on
    the predictor's pods; the pod holds the profile's resources. Valid under KServe's schema and,
    as the pod KServe makes (labels included), strictly under kubernetes-validate."""
    m = build(queue="vision", accelerator=accelerator)
    plain = build(accelerator=accelerator)
    assert m["metadata"]["annotations"] == {
        "yitong.io/model-version": "1",
        "serving.kserve.io/deploymentMode": "RawDeployment",
    }
    predictor = m["spec"]["predictor"]
    assert predictor["labels"] == {"kueue.x-k8s.io/queue-name": "vision"}
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (1, 1)
    assert predictor["deploymentStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    queued_only = ("labels", "maxReplicas", "deploymentStrategy")
    assert {k: v for k, v in predictor.items() if k not in queued_only} == plain["spec"]["predictor"]
    assert m["metadata"]["labels"] == plain["metadata"]["labels"]
    pod = predictor_pod(m)
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "vision"
    [container] = pod["spec"]["containers"]
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert container["resources"]["requests"]["cpu"] == "1"
    assert_valid(m)
    # what Kueue's webhook adds (the gate, its label) keeps the pod valid too
    KueuePodStandIn.webhook(pod)
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(pod, version, strict=True)


def test_a_queued_inference_service_has_no_canary():
    with pytest.raises(BuildError, match="RawDeployment mode, which has no canary share"):
        build(queue="vision", canary_percent=10)


GATE = {"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}, "metadata": {}}
ADMITTED = {"spec": {}, "metadata": {}}
LEAVING = {"spec": GATE["spec"], "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}
OTHER_GATE = {"spec": {"schedulingGates": [{"name": "example.com/other"}]}, "metadata": {}}
READY = {
    "metadata": {"generation": 1},
    "status": {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}]},
}
NOT_READY = {
    "metadata": {},
    "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "MinimumReplicasUnavailable"}]},
}


@pytest.mark.parametrize(
    ("obj", "pods", "expected"),
    [
        (NOT_READY, [GATE], ("queued", "waiting for Kueue admission")),
        ({"metadata": {}, "status": {}}, [GATE], ("queued", "waiting for Kueue admission")),
        (NOT_READY, [ADMITTED], ("starting", "MinimumReplicasUnavailable")),
        (NOT_READY, [LEAVING, ADMITTED], ("starting", "MinimumReplicasUnavailable")),  # a deleted pod's gate
        (NOT_READY, [OTHER_GATE], ("starting", "MinimumReplicasUnavailable")),  # not Kueue's gate
        (READY, [ADMITTED, GATE], ("ready", "a new pod is waiting for Kueue admission")),  # a roll waits
        (READY, [ADMITTED], ("ready", "")),
    ],
)
def test_status_of_gated_pods(obj, pods, expected):
    got = kserve.status(obj, pods)
    assert (got["state"], got["reason"]) == expected


async def test_the_service_queues_an_endpoint_in_its_vcs_kueue_queue(service_factory, cluster, tmp_path):
    """``backend: kubernetes`` with the default ``queue_endpoints``: the create makes the VC's
    Kueue objects (as a job's submit does) and an InferenceService whose predictor's pod is a
    workload of the LocalQueue ``vision``. While another admitted workload holds the VC's cpu
    quota the pod stays gated and the endpoint is ``queued``, "waiting for Kueue admission";
    once the quota frees, Kueue (the stand-in) admits it and the endpoint is ready. A canary is
    refused with a sentence (after the VC boundary's 404); a plain roll waits for admission
    of the new pod too."""
    settings = {
        "backend": "kubernetes",
        "jobs": {"poll_interval": 0.1},
        "backends": {
            "kubernetes": {
                "inventory": {"nvidia.com/gpu": 4},
                "images": {"python3": "python:3.12-slim"},
                "data_volume": {"persistentVolumeClaim": {"claimName": "yitong-data"}},
            }
        },
    }
    async with service_factory(**settings) as svc:
        r = await svc.call("alice", "POST", "models", json={"vc": "vision", "name": "iris"})
        assert r.status_code == 201, r.text
        for i in (1, 2):
            blob = bytes([i]) * 64
            await svc.data.upload("alice", [blob])
            body = {"files": svc.data.entries({"model.joblib": blob}), "framework": "sklearn", "format": "joblib"}
            r = await svc.call("alice", "POST", "models/vision/iris/versions", json=body)
            assert r.status_code == 201, r.text
        # someone else's admitted workload in the VC's queue holds all of its 8 cpus
        hog = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "hog",
                "namespace": "yitong-vision",
                "labels": {"kueue.x-k8s.io/queue-name": "vision", "kueue.x-k8s.io/managed": "true"},
            },
            "spec": {"containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "8"}}}]},
        }
        await cluster.api.request("POST", "/api/v1/namespaces/yitong-vision/pods", hog)

        async def wait(state: str, reason: str = "") -> dict[str, Any]:
            for _ in range(100):
                e = (await svc.call("alice", "GET", "endpoints/iris")).json()
                if e["state"] == state and e["reason"] == reason:
                    return e
                await asyncio.sleep(0.1)
            raise AssertionError(e)

        body = {"name": "iris", "model": "vision/iris@1", "profile": "cpu-small"}
        r = await svc.call("alice", "POST", "endpoints", json=body)
        assert r.status_code == 201 and r.json()["state"] == "starting", r.text
        # the VC's Kueue objects, as for jobs: its ClusterQueue holds the VC's quota
        [lq] = cluster.objects("localqueues", "yitong-vision")
        assert (lq["metadata"]["name"], lq["spec"]["clusterQueue"]) == ("vision", "yitong-vision")
        [cq] = [c for c in cluster.objects("clusterqueues") if c["metadata"]["name"] == "yitong-vision"]
        assert {"name": "cpu", "nominalQuota": "8"} in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        [isvc] = cluster.objects("inferenceservices", "yitong-vision")
        assert isvc["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "RawDeployment"
        assert isvc["spec"]["predictor"]["labels"] == {"kueue.x-k8s.io/queue-name": "vision"}
        assert isvc["spec"]["predictor"]["model"]["resources"]["requests"] == {"cpu": "1", "memory": "2Gi"}
        e = await wait("queued", "waiting for Kueue admission")
        [pod] = [p for p in cluster.objects("pods", "yitong-vision") if p["metadata"]["name"] != "hog"]
        assert pod["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "vision"
        # the quota frees: Kueue admits the pod, KServe's Deployment becomes ready
        await cluster.api.delete("/api/v1/namespaces/yitong-vision/pods/hog")
        e = await wait("ready")
        assert e["traffic"] == {"v1": 100}
        # a canary: refused with a sentence (bob, outside the VC, gets the 404 first)
        canary = {"model": "vision/iris@2", "traffic": {"v2": 10}}
        r = await svc.call("bob", "POST", "endpoints/iris/deploy", json=canary)
        assert r.status_code == 404 and r.json()["detail"] == "there is no endpoint iris"
        r = await svc.call("alice", "POST", "endpoints/iris/deploy", json=canary)
        assert (r.status_code, r.json()["detail"]) == (422, kserve.NO_CANARY)
        # a roll: the new pod queues like the first (the old one answers meanwhile), then takes over
        r = await svc.call("alice", "POST", "endpoints/iris/deploy", json={"model": "vision/iris@2"})
        assert r.status_code == 200, r.text
        e = await wait("ready")
        assert e["version"] == 2 and e["traffic"] == {"v2": 100}
        names = lambda: [p["metadata"]["name"] for p in cluster.objects("pods", "yitong-vision")]  # noqa: E731
        await cluster.wait(lambda: names() == ["iris-predictor-00002"], message=str(names()))
        assert (await svc.call("alice", "DELETE", "endpoints/iris")).status_code == 204
        assert cluster.objects("inferenceservices") == []
    sent = [m for m in cluster.sent if m["kind"] == "InferenceService"]
    assert len(sent) == 3  # the create; the roll's create (409: it exists) and merge patch
    for manifest in sent:
        predictor = {k: v for k, v in manifest["spec"]["predictor"].items() if v is not None}
        assert_valid({**manifest, "spec": {"predictor": predictor}})


def test_the_queued_manifest_in_the_docs_is_the_builders():
    """docs/models.md "Queued by Kueue" shows what ``inference_service(..., queue="vision")`` builds."""
    import yaml

    docs = Path(__file__).resolve().parents[3] / "docs" / "models.md"
    section = docs.read_text().split("#### Queued by Kueue", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == build(queue="vision")
