"""Kubernetes manifests for jobs and VC queues: dict literals, strict validation on 1.33 and 1.37."""

import kubernetes_validate
import pytest

from yitong_services.jobs.devices import BuildError
from yitong_services.jobs.kube import job_manifests, literal
from yitong_services.jobs.kueue import Flavor, priority_class_manifests, vc_queue_manifests
from yitong_services.jobs.netpol import Fence, vc_network_policies
from yitong_services.jobs.spec import spec_from_dict

GI = 2**30
K8S_VERSIONS = ["1.33", "1.37"]
BASE = {
    "name": "mnist",
    "vc": "vision",
    "environment": {"image": "yitong/pytorch:2"},
    "command": ["python", "train.py"],
}
LABELS = {
    "app.kubernetes.io/managed-by": "yitong",
    "yitong.io/job-id": "42",
    "yitong.io/job-name": "mnist",
    "yitong.io/vc": "vision",
}
INDEX_ENV = {
    "name": "JOB_COMPLETION_INDEX",
    "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}},
}


def _env(**extra):
    env = {
        "YITONG_JOB_ID": "42",
        "YITONG_JOB_NAME": "mnist",
        "YITONG_VC": "vision",
        "YITONG_NNODES": "2",
        "YITONG_NPROC_PER_NODE": "4",
        "YITONG_MASTER_PORT": "29500",
        "YITONG_DIST_BACKEND": "nccl",
        "YITONG_OUTPUT_DIR": "/yitong/outputs",
        "YITONG_MASTER_ADDR": "mnist-42-0.mnist-42",
        "YITONG_HOSTS": "mnist-42-0.mnist-42,mnist-42-1.mnist-42",
        **extra,
    }
    return [
        INDEX_ENV,
        *({"name": k, "value": v} for k, v in env.items()),
        {"name": "YITONG_NODE_RANK", "value": "$(JOB_COMPLETION_INDEX)"},
    ]


def test_job_manifests_literal():
    spec = spec_from_dict(
        {
            **BASE,
            "framework": "pytorch",
            "nodes": 2,
            "cpu": 8,
            "memory": "32Gi",
            "retries": 2,
            "accelerator": {"type": "nvidia.com/gpu", "count": 4},
            "max_run_time": "2h",
            "inputs": [{"dataset": "vision/mnist@3"}],
        }
    )
    service, job = job_manifests(spec, 42, "yitong-vision", "vision", input_subpaths={"mnist": "materialized/ab12"})
    assert service == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "mnist-42", "namespace": "yitong-vision", "labels": LABELS},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"yitong.io/job-id": "42"},
            "ports": [{"name": "rdzv", "port": 29500, "targetPort": 29500, "protocol": "TCP"}],
        },
    }
    assert job == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "mnist-42",
            "namespace": "yitong-vision",
            "labels": {
                **LABELS,
                "kueue.x-k8s.io/queue-name": "vision",
                "kueue.x-k8s.io/priority-class": "yitong-normal",
            },
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": 2,
            "parallelism": 2,
            "backoffLimit": 2,
            "suspend": True,
            "activeDeadlineSeconds": 7200,
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {
                    "subdomain": "mnist-42",
                    "restartPolicy": "Never",
                    "enableServiceLinks": False,
                    "automountServiceAccountToken": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 1000,
                        "runAsGroup": 1000,
                        "fsGroup": 1000,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "main",
                            "image": "yitong/pytorch:2",
                            "command": [
                                "torchrun",
                                "--nnodes=2",
                                "--nproc-per-node=4",
                                "--node-rank=$(JOB_COMPLETION_INDEX)",
                                "--master-addr=mnist-42-0.mnist-42",
                                "--master-port=29500",
                                "--no-python",
                                "python",
                                "train.py",
                            ],
                            "env": _env(YITONG_INPUT_MNIST="/yitong/inputs/mnist"),
                            "resources": {
                                "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"},
                                "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"},
                            },
                            "ports": [{"name": "rdzv", "containerPort": 29500, "protocol": "TCP"}],
                            "volumeMounts": [
                                {
                                    "name": "data",
                                    "mountPath": "/yitong/inputs/mnist",
                                    "subPath": "materialized/ab12",
                                    "readOnly": True,
                                },
                                {"name": "data", "mountPath": "/yitong/outputs", "subPath": "jobs/42/outputs"},
                                {"name": "dshm", "mountPath": "/dev/shm"},
                            ],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                                "runAsNonRoot": True,
                            },
                        }
                    ],
                    "volumes": [
                        {"name": "data", "persistentVolumeClaim": {"claimName": "yitong-data"}},
                        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                    ],
                    "nodeSelector": {"accelerator": "nvidia"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                },
            },
        },
    }


CASES = [
    {},
    {
        "framework": "pytorch",
        "nodes": 4,
        "accelerator": {"type": "huawei.com/Ascend910", "count": 8},
        "priority": "high",
    },
    {"framework": "mpi", "procs_per_node": 4, "priority": -3, "max_run_time": 60},
    {"command": "python train.py --seed $(date +%s)", "env": {"A": "$(HOME) ; rm -rf /", "B": "x\ny"}},
    {"inputs": [{"dataset": "vision/a@1"}, {"dataset": "nlp/b-c@latest", "mount": "b-c"}], "outputs": "out/ckpt"},
]


@pytest.mark.parametrize("change", CASES)
@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_job_manifests_strict_valid(change, version):
    spec = spec_from_dict({**BASE, **change})
    subpaths = {str(i.mount): f"materialized/{i.mount}" for i in spec.inputs}
    for manifest in job_manifests(
        spec,
        "7",
        "yitong-vision",
        "vision",
        input_subpaths=subpaths,
        data_volume={"hostPath": {"path": "/var/lib/yitong", "type": "Directory"}},
        ttl_seconds_after_finished=600,
    ):
        kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize(
    "text,expected", [("$(HOME)", "$$(HOME)"), ("a$b", "a$$b"), ("plain", "plain"), ("$$", "$$$$")]
)
def test_literal(text, expected):
    assert literal(text) == expected


def test_user_text_is_not_expanded_by_kubernetes():
    spec = spec_from_dict({**BASE, "command": ["echo", "$(JOB_COMPLETION_INDEX)"], "env": {"X": "$(YITONG_VC)"}})
    _, job = job_manifests(spec, 1, "ns", "q")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["echo", "$$(JOB_COMPLETION_INDEX)"]
    assert {"name": "X", "value": "$$(YITONG_VC)"} in container["env"]


@pytest.mark.parametrize(
    "change,kwargs,message",
    [
        ({"environment": {"kernel": "python3"}}, {}, "Kubernetes jobs need environment.image"),
        ({"framework": "mpi", "nodes": 2}, {}, "multi-node MPI jobs are not supported on Kubernetes"),
        ({"accelerator": {"type": "amd.com/gpu", "count": 1}}, {}, "does not know how to place amd.com/gpu"),
        ({}, {"job_id": "A_1"}, "job id 'A_1' does not make a Kubernetes name"),
        ({"inputs": [{"dataset": "a/b@1"}]}, {}, "no materialised path for input mount"),
        (
            {"inputs": [{"dataset": "a/b@1"}]},
            {"input_subpaths": {"b": "../etc"}},
            "must be relative to the data volume",
        ),
    ],
)
def test_job_refusals(change, kwargs, message):
    kwargs = {"job_id": 1, "namespace": "ns", "queue": "q", **kwargs}
    with pytest.raises((BuildError, ValueError), match=message):
        job_manifests(spec_from_dict({**BASE, **change}), **kwargs)


def test_image_from_kernel():
    _, job = job_manifests(
        spec_from_dict({**BASE, "environment": {"kernel": "python3"}}), 1, "ns", "q", image="yitong/cpu:1"
    )
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "yitong/cpu:1"


def test_vc_queue_manifests_literal():
    manifests = vc_queue_manifests("vision", {"cpu": 8.0, "memory": 16 * GI, "nvidia.com/gpu": 2}, "yitong")
    vc_labels = {"app.kubernetes.io/managed-by": "yitong", "yitong.io/vc": "vision"}
    assert manifests == [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "yitong-vision", "labels": vc_labels}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": {}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": "nvidia"},
            "spec": {
                "nodeLabels": {"accelerator": "nvidia"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "yitong-vision", "labels": vc_labels},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "yitong-vision"}},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "8"},
                                    {"name": "memory", "nominalQuota": "16Gi"},
                                ],
                            }
                        ],
                    },
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [{"name": "nvidia", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}]}],
                    },
                ],
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                "cohort": "yitong",
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": "vision", "namespace": "yitong-vision", "labels": vc_labels},
            "spec": {"clusterQueue": "yitong-vision"},
        },
    ]


@pytest.mark.parametrize(
    "quota,cohort,kwargs,groups",
    [
        (
            {"cpu": 0.5},
            None,
            {},
            [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "default",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "500m"},
                                {"name": "memory", "nominalQuota": "0"},
                            ],
                        }
                    ],
                }
            ],
        ),
        (
            {"huawei.com/Ascend910": 8},
            "c",
            {"borrowing_limits": {"huawei.com/Ascend910": 0}},
            [
                {
                    "coveredResources": ["huawei.com/Ascend910"],
                    "flavors": [
                        {
                            "name": "ascend910",
                            "resources": [{"name": "huawei.com/Ascend910", "nominalQuota": 8, "borrowingLimit": 0}],
                        }
                    ],
                }
            ],
        ),
        (
            {"cpu": 4.0, "nvidia.com/gpu": 1},
            "c",
            {"flavors": [Flavor("cpu-pool", ("cpu", "memory")), Flavor("a100", ("nvidia.com/gpu",), {"gpu": "a100"})]},
            [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "cpu-pool",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "4"},
                                {"name": "memory", "nominalQuota": "0"},
                            ],
                        }
                    ],
                },
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 1}]}],
                },
            ],
        ),
    ],
)
def test_vc_queue_groups(quota, cohort, kwargs, groups):
    manifests = vc_queue_manifests("nlp", quota, cohort, **kwargs)
    [cq] = [m for m in manifests if m["kind"] == "ClusterQueue"]
    assert cq["spec"]["resourceGroups"] == groups
    assert ("cohort" in cq["spec"]) == bool(cohort)
    used = {f["name"] for g in groups for f in g["flavors"]}
    assert {m["metadata"]["name"] for m in manifests if m["kind"] == "ResourceFlavor"} == used


def test_vc_queue_uncovered_resource():
    with pytest.raises(ValueError, match="no Kueue ResourceFlavor covers amd.com/gpu"):
        vc_queue_manifests("nlp", {"amd.com/gpu": 1})


# Kueue's CRDs are not in kubernetes-validate: check the v1beta1 shape (field names per Kueue's API types)
KUEUE_FIELDS = {
    "ResourceFlavor": {"nodeLabels", "nodeTaints", "tolerations", "topologyName"},
    "ClusterQueue": {
        "namespaceSelector",
        "cohort",
        "queueingStrategy",
        "resourceGroups",
        "preemption",
        "flavorFungibility",
        "admissionChecks",
        "stopPolicy",
        "fairSharing",
    },
    "LocalQueue": {"clusterQueue", "stopPolicy"},
}


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_vc_queue_structure(version):
    manifests = vc_queue_manifests(
        "vision", {"cpu": 8.0, "memory": 16 * GI, "nvidia.com/gpu": 2, "huawei.com/Ascend910": 4}
    )
    kubernetes_validate.validate(manifests[0], version, strict=True)  # the Namespace
    for m in manifests[1:] + priority_class_manifests():
        assert m["apiVersion"] == "kueue.x-k8s.io/v1beta1"
        if m["kind"] == "WorkloadPriorityClass":
            assert set(m) == {"apiVersion", "kind", "metadata", "value", "description"} and isinstance(m["value"], int)
            continue
        assert set(m["spec"]) <= KUEUE_FIELDS[m["kind"]], m["kind"]
        if m["kind"] == "ClusterQueue":
            seen: set[str] = set()
            for group in m["spec"]["resourceGroups"]:
                assert not seen & set(group["coveredResources"])  # a resource is in one group only
                seen |= set(group["coveredResources"])
                for flavor in group["flavors"]:
                    assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]


@pytest.mark.parametrize(
    "kwargs, pod_context",
    [
        (
            {},
            {
                "runAsNonRoot": True,
                "runAsUser": 1000,
                "runAsGroup": 1000,
                "fsGroup": 1000,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
        ),
        (
            {"run_as_user": 2345, "fs_group": 100},
            {
                "runAsNonRoot": True,
                "runAsUser": 2345,
                "runAsGroup": 2345,
                "fsGroup": 100,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
        ),
        (
            {"fs_group": None},
            {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        ),
    ],
)
@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_job_pods_are_confined(kwargs, pod_context, version):
    _service, job = job_manifests(spec_from_dict(BASE), 7, "yitong-vision", "vision", **kwargs)
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"] == pod_context
    assert pod["automountServiceAccountToken"] is False
    assert pod["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
    }
    kubernetes_validate.validate(job, version, strict=True)


def test_job_pods_never_run_as_root():
    with pytest.raises(BuildError, match="never run as root"):
        job_manifests(spec_from_dict(BASE), 7, "yitong-vision", "vision", run_as_user=0)


def test_vc_network_policies_literal():
    fence, jobs = vc_network_policies("vision")
    labels = {"app.kubernetes.io/managed-by": "yitong", "yitong.io/vc": "vision"}
    assert fence == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "yitong-vc-fence", "namespace": "yitong-vision", "labels": labels},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [
                {
                    "from": [
                        {
                            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "jupyterhub"}},
                            "podSelector": {"matchLabels": {"hub.jupyter.org/network-access-singleuser": "true"}},
                        }
                    ]
                }
            ],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "jupyterhub"}},
                            "podSelector": {"matchLabels": {"app": "jupyterhub", "component": "proxy"}},
                        }
                    ],
                    "ports": [{"protocol": "TCP", "port": 8000}],
                },
                {
                    "to": [
                        {
                            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                        }
                    ],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                },
            ],
        },
    }
    job_pods = {"matchExpressions": [{"key": "yitong.io/job-id", "operator": "Exists"}]}
    assert jobs == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "yitong-vc-jobs", "namespace": "yitong-vision", "labels": labels},
        "spec": {
            "podSelector": job_pods,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": job_pods}]}],
            "egress": [{"to": [{"podSelector": job_pods}]}],
        },
    }


@pytest.mark.parametrize(
    "fence, prefix, expect",
    [
        (Fence(), "yitong-", {"namespace": "yitong-vision", "proxy_ns": "jupyterhub", "port": 8000, "cidrs": []}),
        (
            Fence(hub_namespace="hub", proxy_port=8080, extra_egress=("10.0.0.0/8", "192.168.1.5/32")),
            "lab-",
            {"namespace": "lab-vision", "proxy_ns": "hub", "port": 8080, "cidrs": ["10.0.0.0/8", "192.168.1.5/32"]},
        ),
    ],
)
@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_vc_network_policies_table(fence, prefix, expect, version):
    policies = vc_network_policies("vision", fence, namespace_prefix=prefix)
    for policy in policies:
        kubernetes_validate.validate(policy, version, strict=True)
        assert policy["metadata"]["namespace"] == expect["namespace"]
    egress = policies[0]["spec"]["egress"]
    proxy = egress[0]
    assert proxy["to"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] == expect["proxy_ns"]
    assert proxy["ports"] == [{"protocol": "TCP", "port": expect["port"]}]
    assert [b["ipBlock"]["cidr"] for rule in egress[2:] for b in rule["to"]] == expect["cidrs"]
    # nothing reaches the platform service's own port, the API server or any other namespace
    peers = [peer for rule in egress for peer in rule["to"]]
    assert all(
        "namespaceSelector" not in p
        or p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] in (expect["proxy_ns"], "kube-system")
        for p in peers
    )
