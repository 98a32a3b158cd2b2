"""Kubernetes backend: pod manifests validated strictly, and a real start/poll/stop against kmock.

The API server is the kmock emulator (kmock_shims.py) and pods run as local processes through a
fake kubelet (fake_kubelet.py); see the `kube_api` fixture in conftest.py.
"""

from __future__ import annotations

import os
import sys

import kubernetes_validate
import pytest
from helpers import free_port
from kubernetes_asyncio.client import ApiClient
from spawner.platform_standin import GiB, profile, vc
from spawner.test_local_backend import wait_http
from traitlets.config import Config

from yitong_spawner.builders import BuildError, kube_security
from yitong_spawner.hubconfig import hub_config

CPU = profile("cpu-small", cpu=1, memory=2 * GiB)
GPU2 = profile(
    "gpu-2",
    cpu=4,
    memory=16 * GiB,
    accelerator={"type": "nvidia.com/gpu", "count": 2},
    arch="amd64",
    image="yitong/singleuser-cuda:latest",
)
NPU = profile(
    "npu-1",
    cpu=2,
    memory=8 * GiB,
    accelerator={"type": "huawei.com/Ascend910", "count": 1},
    arch="arm64",
    image="yitong/singleuser-ascend:latest",
)


def kube_config(port: int = 8888) -> Config:
    c = Config()
    c.YitongSpawner.backend = "kubernetes"
    c.KubeSpawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
    c.KubeSpawner.args = ["--allow-root"] if os.geteuid() == 0 else []
    c.KubeSpawner.port = port
    c.KubeSpawner.events_enabled = False
    c.KubeSpawner.start_timeout = 60
    return c


@pytest.fixture
def offer(platform):
    platform.spawn_options["alice"] = [vc("vision", [CPU, GPU2, NPU])]


@pytest.mark.parametrize(
    "prof, container_resources, spec_parts",
    [
        (CPU, {"limits": {"cpu": 1.0, "memory": 2 * GiB}, "requests": {"cpu": 1.0, "memory": 2 * GiB}}, {}),
        (
            GPU2,
            {
                "limits": {"cpu": 4.0, "memory": 16 * GiB, "nvidia.com/gpu": "2"},
                "requests": {"cpu": 4.0, "memory": 16 * GiB, "nvidia.com/gpu": "2"},
            },
            {
                "nodeSelector": {"accelerator": "nvidia"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            },
        ),
        (
            NPU,
            {
                "limits": {"cpu": 2.0, "memory": 8 * GiB, "huawei.com/Ascend910": "1"},
                "requests": {"cpu": 2.0, "memory": 8 * GiB, "huawei.com/Ascend910": "1"},
            },
            {
                "nodeSelector": {"accelerator": "huawei-Ascend910"},
                "tolerations": [{"key": "huawei.com/Ascend910", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            },
        ),
    ],
)
async def test_pod_manifest_is_valid(kube_api, make_spawner, platform, prof, container_resources, spec_parts):
    spawner = make_spawner("alice", config=kube_config())
    allocation = {"id": 7, "resources": {}}
    child = spawner.build_child(spawner.profile_overrides({"name": "vision"}, prof, allocation))
    pod = ApiClient().sanitize_for_serialization(await child.get_pod_manifest())
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    kubernetes_validate.validate(pod, "1.37", strict=True)
    assert child.namespace == "yitong-vision"
    labels = pod["metadata"]["labels"]
    assert {k: labels[k] for k in ("kueue.x-k8s.io/queue-name", "yitong.io/vc", "yitong.io/profile")} == {
        "kueue.x-k8s.io/queue-name": "vision",
        "yitong.io/vc": "vision",
        "yitong.io/profile": prof["name"],
    }
    [container] = pod["spec"]["containers"]
    assert container["image"] == prof["image"]
    assert container["resources"] == container_resources
    for key, value in spec_parts.items():
        assert pod["spec"][key] == value
    if not spec_parts:
        assert not {"nodeSelector", "tolerations", "affinity"} & set(pod["spec"])
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env["YITONG_VC"], env["YITONG_PROFILE"], env["YITONG_ALLOCATION_ID"]) == ("vision", prof["name"], "7")
    assert env["YITONG_API_URL"] == platform.url


async def test_overrides_do_not_leak_between_spawns(kube_api, make_spawner, platform):
    spawner = make_spawner("alice", config=kube_config())
    first = spawner.build_child(spawner.profile_overrides({"name": "vision"}, GPU2, {"resources": {}}))
    second = spawner.build_child(spawner.profile_overrides({"name": "vision"}, CPU, {"resources": {}}))
    assert first.extra_resource_limits == {"nvidia.com/gpu": "2"}
    assert second.extra_resource_limits == {} and second.node_selector == {} and second.tolerations == []


async def test_start_poll_stop_in_emulator(kube_api, make_spawner, platform, offer):
    emulator, kubelet = kube_api
    port = free_port()
    spawner = make_spawner("alice", config=kube_config(port), user_options={"vc": "vision", "profile": "gpu-2"})
    url = await spawner.start()
    try:
        assert url == f"http://127.0.0.1:{port}"
        r = await wait_http(f"{url}/user/alice/api")
        assert r.status_code == 200 and "version" in r.json()
        assert await spawner.poll() is None
        [pod] = [p for p in kubelet.started if p["metadata"]["namespace"] == "yitong-vision"][-1:]
        assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
        state = spawner.get_state()
        assert state["namespace"] == "yitong-vision" and state["child_state"]["namespace"] == "yitong-vision"
        assert state["allocation"]["id"] in platform.allocations
    finally:
        await spawner.stop()
    assert ("yitong-vision", pod["metadata"]["name"]) not in kubelet.procs
    assert platform.released == [state["allocation"]["id"]]
    assert await spawner.poll() is not None


@pytest.mark.parametrize(
    "kwargs, uid, fs_group",
    [({}, 1000, 1000), ({"run_as_user": 4242, "fs_group": 100}, 4242, 100), ({"fs_group": None}, 1000, None)],
)
async def test_notebook_pods_are_confined(kube_api, make_spawner, platform, kwargs, uid, fs_group):
    """The hub config's KubeSpawner traits (`builders.kube_security`) make a non-root pod without a
    service-account token that validates strictly."""
    config = kube_config()
    for name, value in kube_security(**kwargs).items():
        setattr(config.KubeSpawner, name, value)
    spawner = make_spawner("alice", config=config)
    child = spawner.build_child(spawner.profile_overrides({"name": "vision"}, CPU, {"id": 1, "resources": {}}))
    pod = ApiClient().sanitize_for_serialization(await child.get_pod_manifest())
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    kubernetes_validate.validate(pod, "1.37", strict=True)
    assert pod["spec"]["automountServiceAccountToken"] is False
    expected_pod = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    if fs_group is not None:
        expected_pod["fsGroup"] = fs_group
    assert pod["spec"]["securityContext"] == expected_pod
    [container] = pod["spec"]["containers"]
    assert container["securityContext"] == {
        "runAsUser": uid,
        "runAsGroup": uid,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def test_root_notebook_pods_are_refused():
    with pytest.raises(BuildError, match="never run as root"):
        kube_security(run_as_user=0)


@pytest.mark.parametrize(
    "section, uid, fs_group", [({}, 1000, 1000), ({"run_as_user": 2000, "fs_group": 3000}, 2000, 3000)]
)
def test_hub_config_confines_kubernetes_pods(section, uid, fs_group):
    cfg = hub_config(
        {"backend": "kubernetes", "backends": {"kubernetes": section}},
        settings_path="/s.yaml",
        data_dir="/d",
        service_token="t",
        bin_dir="/venv/bin",
    )
    assert cfg["KubeSpawner"] == kube_security(uid, fs_group)
    assert cfg["KubeSpawner"]["automount_service_account_token"] is False


# -- profiles written the z2jh way ------------------------------------------------------------------

OLD_PROFILE_LIST = [  # as a z2jh deployment left it in the hub config
    {
        "display_name": "Datascience environment",
        "slug": "datascience",
        "default": True,
        "kubespawner_override": {"image": "jupyter/datascience-notebook:latest", "cpu_limit": 8, "mem_limit": "32G"},
    },
    {"display_name": "Minimal", "kubespawner_override": {"image": "jupyter/minimal-notebook:latest"}},
]


async def test_an_old_kubespawner_profile_list_never_overrides_the_choice(kube_api, make_spawner, platform, offer):
    """A person who picked the CUDA profile gets the CUDA image and its size, whatever default
    profile a `c.KubeSpawner.profile_list` left in the hub config names (KubeSpawner would apply
    it at start)."""
    _emulator, kubelet = kube_api
    port = free_port()
    config = kube_config(port)
    config.KubeSpawner.profile_list = OLD_PROFILE_LIST
    spawner = make_spawner("alice", config=config, user_options={"vc": "vision", "profile": "gpu-2"})
    await spawner.start()
    try:
        [pod] = [p for p in kubelet.started if p["metadata"]["namespace"] == "yitong-vision"][-1:]
        [container] = pod["spec"]["containers"]
        assert container["image"] == "yitong/singleuser-cuda:latest"
        assert container["resources"]["limits"] == {"cpu": 4.0, "memory": 16 * GiB, "nvidia.com/gpu": "2"}
        assert pod["metadata"]["labels"]["yitong.io/profile"] == "gpu-2"
        assert spawner.child.profile_list == []
    finally:
        await spawner.stop()


def z2jh_config(port: int = 8888) -> Config:
    from yitong_spawner.profile_list import hub_overrides

    c = kube_config(port)
    c.YitongSpawner.kubespawner_overrides = hub_overrides(
        [
            {
                "display_name": "Learning Data Science",
                "kubespawner_override": {
                    "image": "quay.io/jupyter/datascience-notebook:2024-04-29",
                    "environment": {"COURSE": "data8"},
                    "node_selector": {"pool": "teaching"},
                    "lifecycle_hooks": {"postStart": {"exec": {"command": ["sh", "-c", "echo ready"]}}},
                },
            },
            {
                "display_name": "Choose your image",
                "slug": "images",
                "kubespawner_override": {"cpu_limit": 2, "mem_limit": "4G"},
                "profile_options": {
                    "image": {
                        "choices": {"tf": {"kubespawner_override": {"image": "pangeo/ml-notebook:master"}}},
                        "unlisted_choice": {
                            "enabled": True,
                            "validation_regex": "^[a-z0-9./-]+:[A-Za-z0-9._-]+$",
                            "validation_message": "Must be an image with a tag",
                            "kubespawner_override": {"image": "{value}"},
                        },
                    }
                },
            },
        ]
    )
    return c


LEARNING = profile("learning-data-science", image="quay.io/jupyter/datascience-notebook:2024-04-29")
CUSTOM = profile("images-custom", cpu=2, memory=4 * GiB, image="")


async def test_z2jh_override_keys_reach_the_pod(kube_api, make_spawner, platform):
    spawner = make_spawner("alice", config=z2jh_config())
    child = spawner.build_child(spawner.profile_overrides({"name": "vision"}, LEARNING, {"id": 3, "resources": {}}))
    pod = ApiClient().sanitize_for_serialization(await child.get_pod_manifest())
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    kubernetes_validate.validate(pod, "1.37", strict=True)
    [container] = pod["spec"]["containers"]
    assert container["lifecycle"] == {"postStart": {"exec": {"command": ["sh", "-c", "echo ready"]}}}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env["COURSE"], env["YITONG_PROFILE"]) == ("data8", "learning-data-science")
    assert pod["spec"]["nodeSelector"] == {"pool": "teaching"}
    assert child.namespace == "yitong-vision"  # the platform's own traits win


@pytest.mark.parametrize(
    "custom, outcome",
    [
        ("quay.io/jupyter/r-notebook:2024-04-29", "quay.io/jupyter/r-notebook:2024-04-29"),
        ("no-tag", "Must be an image with a tag"),
        ("x:1; rm -rf /", "Must be an image with a tag"),
        ("", "This profile needs a custom value"),
    ],
)
async def test_unlisted_choice_is_checked_and_becomes_the_image(kube_api, make_spawner, platform, custom, outcome):
    from tornado.web import HTTPError  # the hub's spawn errors

    platform.spawn_options["alice"] = [vc("vision", [CUSTOM])]
    options = {"vc": "vision", "profile": "images-custom", **({"custom": custom} if custom else {})}
    spawner = make_spawner("alice", config=z2jh_config(), user_options=options)
    if ":" not in outcome:
        with pytest.raises(HTTPError, match=outcome):
            await spawner.reserve()
        return
    await spawner.reserve()
    vc_model, prof, allocation = spawner._reserved
    child = spawner.build_child(spawner.profile_overrides(vc_model, prof, allocation))
    assert child.image == outcome
    assert (child.cpu_limit, child.mem_limit) == (2.0, 4 * GiB)
    await spawner.release()
