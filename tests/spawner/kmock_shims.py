"""SHIMS for kmock 0.8's KubernetesEmulator so kubernetes_asyncio/KubeSpawner can talk to it.

1. kubernetes_asyncio sends `?watch=True` (Python's bool spelling); kmock only recognises the
   exact string `true`. We parse the query case-insensitively.
2. A real API server fills `metadata.namespace` (from the URL), `metadata.uid`,
   `metadata.resourceVersion`, `metadata.creationTimestamp` and an initial `status` on create;
   the emulator stores the body as sent. KubeSpawner needs the uid and `status.phase`.

3. Listing an undeclared resource is a 404; `start_emulator()` declares the core kinds KubeSpawner uses.

`start_emulator()` returns the running emulator and its server; `write_kubeconfig()` writes the
dummy kubeconfig KubeSpawner needs even offline.
"""

from __future__ import annotations

import datetime
import itertools
import uuid

import kmock
from kmock._internal import enums, parsing

_original_guess_k8s = parsing.guess_k8s


def _guess_k8s_caseless(k8s, method, query):
    query = {k: (v.lower() if k == "watch" else v) for k, v in query.items()}
    return _original_guess_k8s(k8s, method, query)


parsing.guess_k8s = _guess_k8s_caseless  # shim 1 (kmock.rendering calls parsing.guess_k8s)

_versions = itertools.count(1)


class Emulator(kmock.KubernetesEmulator):
    async def _handle(self, request):
        if request.action == enums.action.CREATE and isinstance(request.data, dict):  # shim 2
            meta = request.data.setdefault("metadata", {})
            if request.namespace:
                meta.setdefault("namespace", request.namespace)
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            meta["resourceVersion"] = str(next(_versions))
            if request.resource is not None and request.resource.plural == "pods":
                request.data.setdefault("status", {"phase": "Pending"})
        return await super()._handle(request)


CORE_KINDS = {
    "pods": "Pod",
    "events": "Event",
    "services": "Service",
    "secrets": "Secret",
    "persistentvolumeclaims": "PersistentVolumeClaim",
}


async def start_emulator():
    emulator = Emulator()
    for plural, kind in CORE_KINDS.items():  # listing needs declared resources, even when empty
        emulator.resources[f"v1/{plural}"] = kmock.ResourceInfo(namespaced=True, kind=kind)
    await emulator.__aenter__()
    server = kmock.Server(emulator)
    await server.__aenter__()
    return emulator, server


def write_kubeconfig(path: str, url: str) -> None:
    path_text = f"""apiVersion: v1
kind: Config
clusters:
- name: kmock
  cluster: {{server: "{url}"}}
users:
- name: kmock
  user: {{token: dummy}}
contexts:
- name: kmock
  context: {{cluster: kmock, user: kmock, namespace: default}}
current-context: kmock
"""
    with open(path, "w") as f:
        f.write(path_text)
