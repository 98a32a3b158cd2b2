"""A VC on Kubernetes: its namespace and Kueue objects (``kueue.x-k8s.io/v1beta1``).

Per VC: a Namespace ``<prefix><vc>``, a ClusterQueue ``<prefix><vc>`` admitting only that
namespace, with the VC's quota as ``nominalQuota`` per ResourceFlavor and a ``cohort`` shared
by all VCs (so idle quota can be borrowed), and a LocalQueue named ``<vc>`` in the namespace (the
``kueue.x-k8s.io/queue-name`` of jobs and notebooks). ResourceFlavors are cluster-wide: the
same objects come with every VC (applying them again changes nothing). A resource absent from
the VC's quota is not covered by its ClusterQueue, so Kueue never admits a job asking for it
(the platform refuses such a job at submit before that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..vcs.devices import DEVICES, DeviceMap
from ..vcs.quantities import Amount, Resources, format_amount

KUEUE = "kueue.x-k8s.io/v1beta1"
PRIORITY_CLASSES = {"yitong-low": -100, "yitong-normal": 0, "yitong-high": 100}


@dataclass(frozen=True)
class Flavor:
    """A Kueue ResourceFlavor and the resources it covers in every ClusterQueue."""

    name: str
    resources: tuple[str, ...]
    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()


def default_flavors(devices: Mapping[str, DeviceMap] = DEVICES) -> list[Flavor]:
    """``default`` for cpu and memory, one flavor per device type placed like the jobs are."""
    out = [Flavor("default", ("cpu", "memory"))]
    for kind, dev in sorted(devices.items()):
        out.append(Flavor(dev.flavor_name, (kind,), dict(dev.node_selector), tuple(dev.toleration_manifests())))
    return out


def priority_class_name(priority: int) -> str:
    """Kubernetes has three classes: numbers below 0 are low, above 0 high."""
    return "yitong-low" if priority < 0 else "yitong-high" if priority > 0 else "yitong-normal"


def priority_class_manifests() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": KUEUE,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": f"Yitong job priority {name.removeprefix('yitong-')}",
        }
        for name, value in PRIORITY_CLASSES.items()
    ]


def flavor_manifest(flavor: Flavor) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if flavor.node_labels:
        spec["nodeLabels"] = dict(flavor.node_labels)
    if flavor.tolerations:
        spec["tolerations"] = [dict(t) for t in flavor.tolerations]
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": flavor.name}, "spec": spec}


def _quota(resource: str, amount: Amount) -> str | int:
    return format_amount(resource, amount) if resource in ("cpu", "memory") else int(amount)


def resource_groups(
    quota: Resources, flavors: Sequence[Flavor], borrowing_limits: Resources | None = None
) -> list[dict[str, Any]]:
    """One group per flavor that covers a resource of the quota; its other resources get 0."""
    covered = {r for f in flavors for r in f.resources}
    if stray := sorted(set(quota) - covered):
        raise ValueError(f"no Kueue ResourceFlavor covers {', '.join(stray)}")
    groups = []
    for flavor in flavors:
        if not set(flavor.resources) & set(quota):
            continue
        resources = []
        for r in flavor.resources:
            item: dict[str, Any] = {"name": r, "nominalQuota": _quota(r, quota.get(r, 0))}
            if borrowing_limits and r in borrowing_limits:
                item["borrowingLimit"] = _quota(r, borrowing_limits[r])
            resources.append(item)
        groups.append(
            {"coveredResources": list(flavor.resources), "flavors": [{"name": flavor.name, "resources": resources}]}
        )
    return groups


def vc_queue_manifests(
    vc: str,
    quota: Resources,
    cohort: str | None = "yitong",
    flavors: Sequence[Flavor] | None = None,
    *,
    namespace_prefix: str = "yitong-",
    borrowing_limits: Resources | None = None,
) -> list[dict[str, Any]]:
    """``[Namespace, ResourceFlavor..., ClusterQueue, LocalQueue]`` for one VC (apply in order)."""
    flavors = list(flavors) if flavors is not None else default_flavors()
    namespace = f"{namespace_prefix}{vc}"
    labels = {"app.kubernetes.io/managed-by": "yitong", "yitong.io/vc": vc}
    groups = resource_groups(quota, flavors, borrowing_limits)
    used = {f["name"] for g in groups for f in g["flavors"]}
    cq_spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": groups,
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
    }
    if cohort:
        cq_spec["cohort"] = cohort
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}},
        *[flavor_manifest(f) for f in flavors if f.name in used],
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": namespace, "labels": labels},
            "spec": cq_spec,
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": vc, "namespace": namespace, "labels": labels},
            "spec": {"clusterQueue": namespace},
        },
    ]
