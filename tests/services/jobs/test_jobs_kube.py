"""Jobs on the Kubernetes backend, through the real service app (``backend: kubernetes``).

Kubernetes, Kueue and the kubelet cannot run here: they are the system boundary. The backend
(``jobs/runner_kube.py``) talks real HTTP through kubernetes_asyncio, with a kubeconfig from
``$KUBECONFIG``, to the kmock emulator; stand-ins for Kueue, the Job controller and a kubelet
work it (``tests/services/jobs/kube_cluster.py``). Pods run as local processes: images are
ignored (commands run with this host's PATH), the headless Service's names resolve to 127.0.0.1,
and the data volume is a ``hostPath`` on the service's data directory whose mounts the fake
kubelet emulates by rewriting paths. Every object the backend sent is validated strictly for
Kubernetes 1.33 and 1.37 (Kueue's kinds, which kubernetes-validate lacks, by their v1beta1 fields).
"""

from __future__ import annotations

import asyncio
import base64
import sys

import kubernetes_validate
import pytest
from helpers import free_port, served
from jobs_helpers import DDP, py_job, wait_state

from tests.services.conftest import PREFIX
from tests.services.jobs.kube_cluster import FakeCluster
from yitong_services.core.settings import Settings
from yitong_services.jobs.runner_kube import KubeBackend, KubeRef, input_subpaths, job_polled

K8S_VERSIONS = ("1.33", "1.37")
KUEUE_FIELDS = {  # v1beta1 spec fields (as in tests/services/jobs/test_kube.py)
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


@pytest.fixture
async def cluster(tmp_path, monkeypatch):
    c = await FakeCluster(tmp_path / "cluster").start()
    monkeypatch.setenv("KUBECONFIG", str(c.kubeconfig))
    yield c
    await c.stop()


def kube_settings(tmp_path, **jobs) -> dict:
    return {
        "backend": "kubernetes",
        "jobs": {"poll_interval": 0.1, **jobs},
        "backends": {
            "kubernetes": {
                "inventory": {"nvidia.com/gpu": 4},
                "images": {"python3": "python:3.12-slim"},
                "data_volume": {"hostPath": {"path": str(tmp_path / "data"), "type": "Directory"}},
                "delete_timeout": 30,
            }
        },
    }


@pytest.fixture
async def svc(service_factory, cluster, tmp_path):
    async with service_factory(**kube_settings(tmp_path)) as s:
        yield s


def assert_valid(sent: list[dict]) -> None:
    assert sent
    for manifest in sent:
        if manifest["apiVersion"].startswith("kueue.x-k8s.io/"):
            if manifest["kind"] == "WorkloadPriorityClass":
                assert set(manifest) == {"apiVersion", "kind", "metadata", "value", "description"}
            else:
                assert set(manifest["spec"]) <= KUEUE_FIELDS[manifest["kind"]], manifest
            continue
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(manifest, version, strict=True)


async def submit(svc, who: str, body: dict) -> dict:
    r = await svc.call(who, "POST", "jobs", json=body)
    assert r.status_code == 201, r.text
    return r.json()


async def test_job_succeeds_logs_and_objects(svc, cluster):
    code = (
        "import os, pathlib; print('hello from', os.environ['YITONG_JOB_ID'], os.environ['YITONG_NODE_RANK']);"
        "pathlib.Path(os.environ['YITONG_OUTPUT_DIR'], 'model.txt').write_text('w')"
    )
    job = await submit(svc, "alice", py_job("hello", "vision", code))
    done = await wait_state(svc, "alice", job["id"])
    assert (done["state"], done["exit_code"], done["attempts"]) == ("succeeded", 0, 1), (done, cluster.errors)
    name = f"hello-{job['id']}"
    assert done["backend_ref"] == f"yitong-vision/{name}/1/1"
    assert done["hosts"] == [f"{name}-0.{name}"] and done["ports"] == {"rdzv": 29500}
    assert f"kubectl -n yitong-vision get pods -l batch.kubernetes.io/job-name={name}" in done["access"]
    logs = await svc.call("alice", "GET", f"jobs/{job['id']}/logs?rank=0")
    assert logs.text == f"hello from {job['id']} 0\n"
    part = await svc.call("alice", "GET", f"jobs/{job['id']}/logs?rank=0&offset=6")
    assert part.text == f"from {job['id']} 0\n"
    assert (await svc.call("alice", "GET", f"jobs/{job['id']}/logs?rank=1")).text == ""
    record = (await svc.call("alice", "GET", f"runs/{done['runs'][0]}")).json()
    assert [a["path"] for a in record["artifacts"]] == ["model.txt"] and record["backend"] == "kubernetes"
    assert (await svc.call("admin", "GET", "allocations")).json() == []

    # what the cluster holds: the VC's queue objects (quota from the database) and the attempt's Job
    [cq] = cluster.objects("clusterqueues")
    assert cq["metadata"]["name"] == "yitong-vision" and cq["spec"]["cohort"] == "yitong"
    quotas = {
        r["name"]: r["nominalQuota"] for g in cq["spec"]["resourceGroups"] for f in g["flavors"] for r in f["resources"]
    }
    assert quotas == {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": 2, "huawei.com/Ascend910": 2}
    assert [q["spec"]["clusterQueue"] for q in cluster.objects("localqueues", "yitong-vision")] == ["yitong-vision"]
    [kjob] = cluster.objects("jobs", "yitong-vision")
    labels = kjob["metadata"]["labels"]
    assert (labels["yitong.io/attempt"], labels["kueue.x-k8s.io/queue-name"], labels["yitong.io/job-id"]) == (
        "1",
        "vision",
        str(job["id"]),
    )
    assert kjob["spec"]["backoffLimit"] == 0 and kjob["spec"]["suspend"] is False  # admitted by Kueue
    env = {e["name"]: e for e in kjob["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["YITONG_JOB_TOKEN"]["valueFrom"] == {"secretKeyRef": {"name": f"{name}-token", "key": "token"}}
    for owner_token in ("JUPYTERHUB_API_TOKEN", "YT_TOKEN"):  # the owner's own hub token, only through the Secret
        assert env[owner_token] == {
            "name": owner_token,
            "valueFrom": {"secretKeyRef": {"name": f"{name}-token", "key": "hub-token"}},
        }
    [secret] = cluster.objects("secrets", "yitong-vision")
    assert set(secret["data"]) == {"token", "hub-token"}
    assert svc.hub.service_token not in {base64.b64decode(v).decode() for v in secret["data"].values()}
    pod_spec = kjob["spec"]["template"]["spec"]
    assert pod_spec["automountServiceAccountToken"] is False and pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["securityContext"]["runAsUser"] == 1000
    assert pod_spec["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # the VC's namespace is fenced: created in it with its queue objects
    policies = cluster.objects("networkpolicies", "yitong-vision")
    assert sorted(p["metadata"]["name"] for p in policies) == ["yitong-vc-fence", "yitong-vc-jobs"]
    assert {p["metadata"]["namespace"] for p in policies} == {"yitong-vision"}
    assert [p["metadata"]["name"] for p in cluster.objects("networkpolicies", "yitong-nlp")] == []
    assert secret["metadata"]["ownerReferences"][0]["uid"] == kjob["metadata"]["uid"]
    [pod] = cluster.objects("pods", "yitong-vision")
    assert pod["spec"]["hostname"] == f"{name}-0" and pod["spec"]["subdomain"] == name

    # after a restart, the attempt is found again rather than created twice
    backend = svc.app.state.jobs.backend
    assert await backend.adopt(job["id"], 1) == done["backend_ref"]
    assert await backend.adopt(job["id"], 2) is None
    assert {m["kind"] for m in cluster.sent} == {
        "Namespace",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "WorkloadPriorityClass",
        "Job",
        "Secret",
        "Service",
        "NetworkPolicy",
    }
    assert_valid(cluster.sent)
    assert cluster.errors == []


async def test_failures_exit_code_and_retry(svc, cluster):
    failing = await submit(svc, "alice", py_job("bad", "vision", "import sys; print('bye'); sys.exit(5)"))
    done = await wait_state(svc, "alice", failing["id"])
    assert (done["state"], done["exit_code"], done["reason"]) == ("failed", 5, "exit code 5"), (done, cluster.errors)
    assert (await svc.call("alice", "GET", f"jobs/{failing['id']}/logs")).text == "bye\n"

    flaky = "import os, sys; print('attempt', os.environ['YITONG_ATTEMPT']); sys.exit(3 if os.environ['YITONG_ATTEMPT'] == '1' else 0)"
    job = await submit(svc, "alice", py_job("flaky", "vision", flaky, retries=1))
    done = await wait_state(svc, "alice", job["id"])
    assert (done["state"], done["attempts"], done["backend_ref"]) == (
        "succeeded",
        2,
        f"yitong-vision/flaky-{job['id']}/2/1",
    ), done
    assert (await svc.call("alice", "GET", f"jobs/{job['id']}/logs")).text == "attempt 2\n"
    [kjob] = [j for j in cluster.objects("jobs", "yitong-vision") if j["metadata"]["name"] == f"flaky-{job['id']}"]
    assert kjob["metadata"]["labels"]["yitong.io/attempt"] == "2"  # attempt 1's Job was deleted first
    runs = [(await svc.call("alice", "GET", f"runs/{r}")).json() for r in done["runs"]]
    assert [(r["attempt"], r["state"], r["exit_code"]) for r in runs] == [(1, "failed", 3), (2, "succeeded", 0)]

    slow = await submit(svc, "alice", py_job("slow", "vision", "import time; time.sleep(60)", max_run_time=1))
    done = await wait_state(svc, "alice", slow["id"], timeout=30)
    assert done["state"] == "failed" and done["reason"] == "max_run_time of 1s exceeded (DeadlineExceeded)", done
    assert_valid(cluster.sent)
    assert cluster.errors == []


async def test_cancel_running_and_waiting_for_kueue(svc, cluster):
    job = await submit(svc, "alice", py_job("sleepy", "vision", "import time; print('up', flush=True); time.sleep(60)"))
    await wait_state(svc, "alice", job["id"], {"running"})
    await cluster.wait(lambda: cluster.kubelet.alive(), message="the pod's process")
    assert (await svc.call("alice", "POST", f"jobs/{job['id']}/cancel")).status_code == 202
    done = await wait_state(svc, "alice", job["id"], timeout=30)
    assert (done["state"], done["reason"]) == ("cancelled", "cancelled"), done
    assert cluster.objects("jobs") == [] and cluster.objects("pods") == []
    assert cluster.objects("services") == [] and cluster.objects("secrets") == []  # owned by the Job
    assert cluster.kubelet.alive() == []

    # Kueue does not admit what the ClusterQueue cannot hold: the Job stays suspended
    await cluster.api.patch(
        "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/yitong-vision",
        {
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "0"},
                                    {"name": "memory", "nominalQuota": "0"},
                                ],
                            }
                        ],
                    }
                ]
            }
        },
    )
    job = await submit(svc, "alice", py_job("held", "vision", "print('never')"))
    running = await wait_state(svc, "alice", job["id"], {"running"})
    key = ("yitong-vision", f"held-{job['id']}")
    why = await cluster.wait(lambda: cluster.kueue.pending.get(key), message="Kueue's verdict")
    assert why == "insufficient quota for cpu in ClusterQueue yitong-vision"
    backend = svc.app.state.jobs.backend
    polled = await backend.poll(running["backend_ref"])
    assert (polled.state, polled.reason) == ("running", "waiting for Kueue admission")
    shown = await wait_until_reason(svc, job["id"], "waiting for Kueue admission")  # the job says why, too
    assert shown["state"] == "running"
    assert await backend.ranks(running["backend_ref"]) == []
    assert (await svc.call("alice", "POST", f"jobs/{job['id']}/cancel")).status_code == 202
    assert (await wait_state(svc, "alice", job["id"], timeout=30))["state"] == "cancelled"
    assert cluster.objects("jobs") == [] and cluster.kubelet.started[-1]["pod"]["metadata"]["name"].startswith(
        "sleepy-"
    )
    assert_valid(cluster.sent)
    assert cluster.errors == []


async def wait_until_reason(svc, job_id: int, reason: str, timeout: float = 20) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        job = (await svc.call("alice", "GET", f"jobs/{job_id}")).json()
        if job["reason"] == reason:
            return job
        assert asyncio.get_running_loop().time() < deadline, job
        await asyncio.sleep(0.1)


async def test_service_restart_keeps_watching(service_factory, cluster, tmp_path):
    async with service_factory(**kube_settings(tmp_path)) as svc:
        job = await submit(svc, "alice", py_job("long", "vision", "import time; time.sleep(3); print('done')"))
        await wait_state(svc, "alice", job["id"], {"running"})
    async with service_factory(**kube_settings(tmp_path)) as svc:  # same database and data directory
        done = await wait_state(svc, "alice", job["id"])
        assert done["state"] == "succeeded", (done, cluster.errors)
        assert (await svc.call("alice", "GET", f"jobs/{job['id']}/logs")).text == "done\n"
    assert len(cluster.objects("jobs")) == 1 and len(cluster.kubelet.started) == 1  # nothing started twice


async def test_device_refusal_creates_nothing(svc, cluster):
    body = py_job("npu", "vision", "0", accelerator={"type": "huawei.com/Ascend910", "count": 1})
    r = await svc.call("alice", "POST", "jobs", json=body)
    assert r.status_code == 422 and r.json()["detail"] == "this cluster has no huawei.com/Ascend910", r.text
    r = await svc.call(
        "alice",
        "POST",
        "jobs",
        json=py_job("gpus", "vision", "0", nodes=3, accelerator={"type": "nvidia.com/gpu", "count": 2}),
    )
    assert r.status_code == 422 and "this cluster has 4 nvidia.com/gpu; the job asks for 6" in r.json()["detail"], (
        r.text
    )
    await asyncio.sleep(0.3)
    assert (await svc.call("admin", "GET", "jobs")).json() == [] and cluster.sent == []


async def test_two_node_pytorch(service_factory, cluster, tmp_path):
    pytest.importorskip("torch")
    port = free_port()  # a real listener: the ranks POST their metrics to YITONG_API_URL
    async with service_factory(**kube_settings(tmp_path, api_url=f"http://127.0.0.1:{port}{PREFIX}api/v1")) as svc:
        async with served(svc.app, port):
            body = {
                "name": "ddp",
                "vc": "vision",
                "environment": {"image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"},
                "command": [sys.executable, "-c", DDP],
                "framework": "pytorch",
                "nodes": 2,
                "procs_per_node": 1,
                "cpu": 1,
                "memory": "1Gi",
            }
            job = await submit(svc, "alice", body)
            done = await wait_state(svc, "alice", job["id"], timeout=240)
            logs = {
                rank: (await svc.call("alice", "GET", f"jobs/{job['id']}/logs?rank={rank}")).text for rank in (0, 1)
            }
            assert (done["state"], done["exit_code"]) == ("succeeded", 0), (done, logs, cluster.errors)
            for rank in (0, 1):
                assert f"rank {rank} of 2" in logs[rank], logs
            name = f"ddp-{job['id']}"
            assert done["hosts"] == [f"{name}-0.{name}", f"{name}-1.{name}"]
            record = (await svc.call("alice", "GET", f"runs/{done['runs'][0]}")).json()
            assert record["metrics"]["world"] == 2 and [a["path"] for a in record["artifacts"]] == ["model.pt"]
            argvs = sorted((s["argv"] for s in cluster.kubelet.started), key=lambda a: a[3])
            assert [a[:4] for a in argvs] == [
                ["torchrun", "--nnodes=2", "--nproc-per-node=1", f"--node-rank={i}"] for i in (0, 1)
            ]
            assert KubeRef.parse(done["backend_ref"]).nodes == 2
            assert_valid(cluster.sent)
            assert cluster.errors == []


# ---- the pure parts: Job status -> state, paths, settings ----

REF = KubeRef("yitong-nlp", "t-3", 2, 2)


def kjob(attempt="2", suspend=False, deleting=False, cond=None):
    meta = {"name": "t-3", "labels": {"yitong.io/attempt": attempt}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status = (
        {
            "conditions": [
                {
                    "type": cond[0],
                    "status": "True",
                    "reason": cond[1],
                    "message": cond[2],
                    "lastTransitionTime": "2026-01-01T00:01:00Z",
                }
            ]
        }
        if cond
        else {}
    )
    return {"metadata": meta, "spec": {"suspend": suspend, "activeDeadlineSeconds": 60}, "status": status}


def pod(index, code, created="2026-01-01T00:00:00Z"):
    state = {"terminated": {"exitCode": code}} if code is not None else {"running": {}}
    return {
        "metadata": {"labels": {"batch.kubernetes.io/job-completion-index": str(index)}, "creationTimestamp": created},
        "status": {"containerStatuses": [{"name": "main", "state": state}]},
    }


@pytest.mark.parametrize(
    ("job", "pods", "expected"),
    [
        (None, [], ("vanished", None, "Kubernetes Job yitong-nlp/t-3 was deleted")),
        (kjob(attempt="1"), [], ("vanished", None, "Kubernetes Job yitong-nlp/t-3 now belongs to another attempt")),
        (kjob(deleting=True), [], ("running", None, "being deleted")),
        (kjob(suspend=True), [], ("running", None, "waiting for Kueue admission")),
        (kjob(), [pod(0, None)], ("running", None, "")),
        (kjob(cond=("Complete", "CompletionsReached", "")), [pod(0, 0), pod(1, 0)], ("succeeded", 0, "")),
        (
            kjob(cond=("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")),
            [pod(0, 0), pod(1, 7)],
            ("failed", 7, ""),
        ),
        (
            kjob(cond=("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")),
            [pod(1, 3, "2026-01-01T00:00:01Z"), pod(1, 0, "2026-01-01T00:00:02Z"), pod(0, 9)],
            ("failed", 9, ""),
        ),
        (
            kjob(cond=("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")),
            [],
            ("failed", None, "BackoffLimitExceeded: Job has reached the specified backoff limit"),
        ),
        (
            kjob(cond=("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")),
            [pod(0, 143)],
            ("failed", 143, "max_run_time of 60s exceeded (DeadlineExceeded)"),
        ),
    ],
)
def test_job_polled(job, pods, expected):
    polled = job_polled(job, pods, REF)
    assert (polled.state, polled.exit_code, polled.reason) == expected


def test_ref_and_subpaths(tmp_path):
    assert KubeRef.parse("yitong-nlp/t-3/2/2") == REF and str(REF) == "yitong-nlp/t-3/2/2"
    data = tmp_path / "data"
    assert input_subpaths({"mnist": str(data / "materialized" / "ab12")}, data) == {"mnist": "materialized/ab12"}
    with pytest.raises(ValueError, match="is not under the data directory"):
        input_subpaths({"mnist": "/elsewhere/ab12"}, data)


def test_settings_are_checked(tmp_path):
    settings = Settings.model_validate({"backend": "kubernetes", "backends": {"kubernetes": {"namspace_prefix": "x-"}}})
    with pytest.raises(ValueError, match="namspace_prefix"):
        KubeBackend(tmp_path, settings)
    settings = Settings.model_validate(
        {"backend": "kubernetes", "backends": {"kubernetes": {"namespace_prefix": "ai-"}}}
    )
    assert KubeBackend(tmp_path, settings).namespace("nlp") == "ai-nlp"


async def test_imported_openpai_roles_on_kubernetes(svc, cluster):
    """An imported chief + 2 workers job: every pod runs its role with OpenPAI's variables and
    reaches the chief's address and port."""
    from pathlib import Path

    text = (Path(__file__).parent / "shapes" / "openpai-master-worker.yaml").read_text()
    r = await svc.call(
        "alice", "POST", "jobs?from=openpai&vc=vision", content=text, headers={"Content-Type": "application/yaml"}
    )
    assert r.status_code == 201, r.text
    done = await wait_state(svc, "alice", r.json()["id"], timeout=120)
    logs = [(await svc.call("alice", "GET", f"jobs/{done['id']}/logs?rank={i}")).text.strip() for i in range(3)]
    assert (done["state"], done["exit_code"]) == ("succeeded", 0), (done, logs, cluster.errors)
    # the fake kubelet gives every pod loopback and its own rendezvous port for the Service's names
    assert logs[0] == "chief 0 of 1"
    at = [line.split(" chief at ") for line in logs[1:]]
    assert [a[0] for a in at] == ["worker 0", "worker 1"] and at[0][1] == at[1][1]
    host, _, port = at[0][1].rpartition(":")
    assert host and port.isdigit(), logs
    assert_valid(cluster.sent)


async def test_a_lost_answer_to_the_job_create_is_unknown_and_the_job_runs_once(svc, cluster, tmp_path):
    """The API creates the Job but its answer never arrives (a timeout: the one piece simulated
    here, at the client's side of the API): the job is not failed; it is found by its labels and
    runs once (its marker file says how often it ran)."""
    backend = svc.app.state.jobs.backend
    real = backend._call
    lost: list[str] = []

    async def answer_lost(method, path, *args, **kwargs):
        result = await real(method, path, *args, **kwargs)
        if method == "POST" and path.endswith("/jobs") and not lost:
            lost.append(path)
            raise TimeoutError()
        return result

    backend._call = answer_lost
    marks = tmp_path / "marks"
    code = f"import os; open({str(marks)!r}, 'a').write(os.environ['YITONG_JOB_ID'] + '\\n')"
    job = await submit(svc, "alice", py_job("lost", "vision", code))
    done = await wait_state(svc, "alice", job["id"])
    assert (done["state"], done["exit_code"], done["attempts"]) == ("succeeded", 0, 1), (done, cluster.errors)
    assert lost and marks.read_text().split() == [str(job["id"])]
