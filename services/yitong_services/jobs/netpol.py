"""A VC's namespace on Kubernetes is fenced: NetworkPolicies that let its pods reach only the hub.

Two policies per VC namespace (``networking.k8s.io/v1``; policies add up):

- ``yitong-vc-fence`` selects every pod of the namespace (notebooks and job pods). Egress: the
  hub's public proxy (pods ``proxy_labels`` in ``hub_namespace``, port ``proxy_port``: the
  platform API is reached through it, as ``/services/yitong/``), DNS (``dns_labels`` in
  ``dns_namespace``) and ``extra_egress`` CIDRs (for a public URL outside the cluster, a
  package mirror). Nothing else: not the platform service's own port, not the Kubernetes API,
  not other namespaces, not the other pods of this namespace. Ingress: only from the hub and
  the proxy (``hub_access_labels`` in ``hub_namespace``: they reach a notebook server).
- ``yitong-vc-jobs`` selects job pods (label ``yitong.io/job-id``): they may talk to the
  other job pods of the namespace (torchrun's rendezvous, NCCL/gloo between nodes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FENCE = "yitong-vc-fence"
JOBS = "yitong-vc-jobs"
JOB_PODS = {"matchExpressions": [{"key": "yitong.io/job-id", "operator": "Exists"}]}


@dataclass(frozen=True)
class Fence:
    """Where the hub and DNS are (the defaults match zero-to-jupyterhub and kube-dns/CoreDNS)."""

    hub_namespace: str = "jupyterhub"
    proxy_labels: Mapping[str, str] = field(default_factory=lambda: {"app": "jupyterhub", "component": "proxy"})
    proxy_port: int = 8000
    hub_access_labels: Mapping[str, str] = field(
        default_factory=lambda: {"hub.jupyter.org/network-access-singleuser": "true"}
    )
    dns_namespace: str = "kube-system"
    dns_labels: Mapping[str, str] = field(default_factory=lambda: {"k8s-app": "kube-dns"})
    extra_egress: Sequence[str] = ()


def _in_namespace(namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "podSelector": {"matchLabels": dict(labels)},
    }


def vc_network_policies(vc: str, fence: Fence = Fence(), *, namespace_prefix: str = "yitong-") -> list[dict[str, Any]]:
    """``[fence, jobs]`` NetworkPolicies for the VC's namespace."""
    namespace = f"{namespace_prefix}{vc}"
    labels = {"app.kubernetes.io/managed-by": "yitong", "yitong.io/vc": vc}
    egress: list[dict[str, Any]] = [
        {
            "to": [_in_namespace(fence.hub_namespace, fence.proxy_labels)],
            "ports": [{"protocol": "TCP", "port": fence.proxy_port}],
        },
        {
            "to": [_in_namespace(fence.dns_namespace, fence.dns_labels)],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        },
    ]
    if fence.extra_egress:
        egress.append({"to": [{"ipBlock": {"cidr": cidr}} for cidr in fence.extra_egress]})
    fenced = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": FENCE, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [_in_namespace(fence.hub_namespace, fence.hub_access_labels)]}],
            "egress": egress,
        },
    }
    jobs = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": JOBS, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "podSelector": JOB_PODS,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": JOB_PODS}]}],
            "egress": [{"to": [{"podSelector": JOB_PODS}]}],
        },
    }
    return [fenced, jobs]
