"""The Helm chart: lint, every rendered object strictly valid, the same objects as the service's builders,
the same settings as the embedded default, the values we pass to z2jh within its documented keys."""

from __future__ import annotations

import copy
import importlib.util
import re
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from helm_helpers import CHART, K8S_VERSIONS, by_kind, crd_validators, z2jh_defaults, z2jh_schema

from yitong_services.core.settings import Settings
from yitong_services.jobs.kueue import default_flavors, flavor_manifest, priority_class_manifests, vc_queue_manifests
from yitong_services.jobs.netpol import vc_network_policies
from yitong_services.jobs.runner_kube import KubeSettings
from yitong_services.vcs.devices import DEFAULT_DEVICE_SETTINGS, DeviceMap
from yitong_services.vcs.quantities import parse_amount

NS = "jupyterhub"
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
#: profiles as z2jh's singleuser.profileList (KubeSpawner's profile_list), which the service and the hub
#: expand (vcs/profile_list.py, yitong_spawner/profile_list.py); values.yaml's VC offers cpu-small and gpu-1
PROFILE_LIST = [
    {
        "display_name": "CPU small",
        "slug": "cpu-small",
        "default": True,
        "kubespawner_override": {"image": "yitong/singleuser-cpu:latest", "cpu_limit": 1, "mem_limit": "2G"},
    },
    {
        "display_name": "GPU 1",  # slug: gpu-1
        "kubespawner_override": {"cpu_limit": 4, "mem_limit": "16G", "extra_resource_limits": {"nvidia.com/gpu": 1}},
    },
    {
        "display_name": "Vision lab",
        "slug": "lab",
        "vcs": ["vision"],
        "profile_options": {
            "image": {
                "display_name": "Image",
                "choices": {
                    "torch": {"display_name": "PyTorch", "default": True, "kubespawner_override": {"image": "t:1"}},
                    "tf": {"display_name": "TensorFlow", "kubespawner_override": {"image": "tf:2"}},
                },
                "unlisted_choice": {"enabled": True, "display_name": "Other image"},
            }
        },
        "kubespawner_override": {"cpu_limit": 2, "mem_limit": "4G"},
    },
]
LAB = {k: v for k, v in PROFILE_LIST[2].items() if k != "vcs"}

#: value sets that together reach every branch of the templates
CASES = {
    "defaults": {},
    "no-cohort-quotas-cluster-rbac": {
        "backends": {
            "kubernetes": {"cohort": None, "network_policy": {"extra_egress": ["10.0.0.0/8", "192.168.1.5/32"]}}
        },
        "platform": {"rbac": {"scope": "cluster"}, "imagePullSecrets": ["regcred"], "nodeSelector": {"role": "infra"}},
        "ssh": {"port": 8022, "ip": "0.0.0.0"},
        "vcs": {
            "vision": {
                "quota": {"cpu": "500m", "memory": 17179869184, "nvidia.com/gpu": 4},
                "groups": ["vision"],
                "profiles": ["gpu-1"],
            },
            "nlp": {"quota": {"cpu": 8, "memory": "32Gi", "huawei.com/Ascend910": 8}, "profiles": ["cpu-small"]},
        },
    },
    "no-fence-nfs-postgres-s3": {
        "backends": {
            "kubernetes": {"network_policy": None, "data_volume": {"nfs": {"server": "nfs.example.org", "path": "/yt"}}}
        },
        "database": {"url": "postgresql+psycopg://yitong:pw@db.example.org/yitong"},
        "storage": {"url": "s3://yitong/store", "options": {"endpoint_url": "https://minio.example.org"}},
        "platform": {"networkPolicy": {"enabled": False}},
    },
    "z2jh-profile-list": {"profiles": PROFILE_LIST, "vcs": {"vision": {"quota": {"cpu": 8, "memory": "32Gi"}}}},
    "prometheus-operator": {
        "alerts": {"scrape_interval": 30, "evaluation_interval": 20},
        "platform": {
            "monitoring": {
                "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
                "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
            }
        },
    },
}


CRDS = {
    "kueue.x-k8s.io/v1beta1": crd_validators("kueue/v1beta1.json"),
    "monitoring.coreos.com/v1": crd_validators("prometheus-operator/v1.json"),
}


def validate(obj: dict[str, Any], version: str) -> None:
    if obj["apiVersion"] in CRDS:
        validator = CRDS[obj["apiVersion"]][obj["kind"]]
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]
        assert not errors, (obj["kind"], errors)
    else:
        kubernetes_validate.validate(obj, version, strict=True)


def test_lint_is_clean(chart_dir):
    import helm_python as helm

    for version in K8S_VERSIONS:
        report = helm.lint(str(chart_dir), strict=True, kube_version=f"v{version}.0")
        assert report["errors"] == [] and all(m["severity"] < 2 for m in report["messages"]), report


def test_lint_with_a_z2jh_profile_list(chart_dir):
    """A profileList-shaped `profiles` passes `helm lint` (the schema), as the service and the hub take it."""
    import helm_python as helm

    # (PROFILE_LIST's lab names VC vision, which the chart's values do not have: render fails, so lint does)
    values = {"profiles": [*PROFILE_LIST[:2], LAB], "vcs": {"default": {"profiles": ["cpu-small", "gpu-1", "lab-tf"]}}}
    report = helm.lint(str(chart_dir), values, strict=True, kube_version=f"v{K8S_VERSIONS[-1]}.0")
    assert report["errors"] == [] and all(m["severity"] < 2 for m in report["messages"]), report
    bad = {"profiles": [{"display_name": "x", "kubespawner_overide": {}}]}
    report = helm.lint(str(chart_dir), bad, kube_version=f"v{K8S_VERSIONS[-1]}.0")
    assert any("kubespawner_overide" in m["error"] for m in report["messages"]), report


def test_lint_without_the_dependency_names_it(tmp_path):
    """What an admin sees before `helm dependency build`: the z2jh chart is a real dependency."""
    import shutil

    import helm_python as helm

    shutil.copytree(CHART, tmp_path / "yitong")
    report = helm.lint(str(tmp_path / "yitong"))
    assert any("missing these dependencies: jupyterhub" in m["error"] for m in report["messages"])


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_object_is_strictly_valid(render, case, version):
    objects = render(CASES[case])
    assert len(objects) >= 12
    for obj in objects:
        validate(obj, version)


def test_kueue_schemas_catch_a_wrong_field():
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "a"}}
    validate({**queue, "spec": {"clusterQueue": "q"}}, K8S_VERSIONS[-1])
    with pytest.raises(AssertionError, match="clusterQeue"):
        validate({**queue, "spec": {"clusterQeue": "q"}}, K8S_VERSIONS[-1])


def _settings(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (secret,) = [o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] == "yitong-settings"]
    return yaml.safe_load(secret["stringData"]["settings.yaml"])


def _merged(case: dict[str, Any]) -> dict[str, Any]:
    def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(a)
        for k, v in b.items():
            if v is None:
                out.pop(k, None)
            elif isinstance(v, dict) and isinstance(out.get(k), dict):
                out[k] = merge(out[k], v)
            else:
                out[k] = copy.deepcopy(v)
        return out

    return merge(VALUES, case)


@pytest.mark.parametrize("case", CASES)
def test_the_settings_file_is_read_by_the_service_and_the_hub(render, case, tmp_path):
    from yitong_services.core.settings import load_settings
    from yitong_spawner.hubconfig import load_settings as hub_load

    settings = _settings(render(CASES[case]))
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(settings))
    service = load_settings(path, tmp_path)
    assert service.backend == "kubernetes" and set(service.vcs) == set(_merged(CASES[case])["vcs"])
    kube = dict(settings["backends"]["kubernetes"])
    kube.pop("inventory")
    assert KubeSettings.model_validate(kube).namespace_prefix == "yitong-"
    assert hub_load(path)["backend"] == "kubernetes"
    # in-cluster defaults: the fence knows the release's namespace, jobs reach the API through the proxy
    if settings["backends"]["kubernetes"]["network_policy"] is not None:
        assert settings["backends"]["kubernetes"]["network_policy"]["hub_namespace"] == NS
    assert settings["jobs"]["api_url"] == f"http://proxy-public.{NS}.svc.cluster.local/services/yitong/api/v1"


def test_a_z2jh_profile_list_reaches_the_service_and_the_hub(render, tmp_path):
    """The list goes into the settings file as it is; the service expands it (a VC named by an entry
    offers every profile of it) and the hub checks the unlisted choice's value."""
    from yitong_services.core.settings import load_settings
    from yitong_spawner.profile_list import hub_overrides

    settings = _settings(render(CASES["z2jh-profile-list"]))
    assert settings["profiles"] == PROFILE_LIST
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(settings))
    service = load_settings(path, tmp_path)
    assert set(service.profiles) == {"cpu-small", "gpu-1", "lab-torch", "lab-tf", "lab-custom"}
    assert service.vcs["vision"].profiles == ["lab-torch", "lab-tf", "lab-custom"]
    assert service.profiles["gpu-1"].accelerator.count == 1
    assert hub_overrides(settings["profiles"])["lab-custom"]["unlisted"] is not None  # the person types the image


def _amounts(quota_items: list[dict[str, Any]]) -> dict[str, Any]:
    return {r["name"]: parse_amount(r["name"], r["nominalQuota"]) for r in quota_items}


def _normal(obj: dict[str, Any]) -> dict[str, Any]:
    """A ClusterQueue with its quantities parsed (the chart writes them as given, the builder formats them)."""
    obj = copy.deepcopy(obj)
    if obj["kind"] == "ClusterQueue":
        for group in obj["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                flavor["resources"] = _amounts(flavor["resources"])
    return obj


@pytest.mark.parametrize("case", CASES)
def test_vc_objects_are_the_builders(render, case):
    """Namespaces, flavors, ClusterQueues, LocalQueues, priority classes and NetworkPolicies: the same
    objects the platform service creates for a VC (jobs/kueue.py, jobs/netpol.py)."""
    values = _merged(CASES[case])
    objects = by_kind(render(CASES[case]))
    kube = values["backends"]["kubernetes"]
    devices = {k: DeviceMap.model_validate({**v, "type": k}) for k, v in values["devices"].items()}
    flavors = default_flavors(devices)
    # every flavor of the device table, used by a VC here or not (a VC made later through the API may)
    expected: list[dict[str, Any]] = [*priority_class_manifests(), *map(flavor_manifest, flavors)]
    for vc, spec in values["vcs"].items():
        quota = {r: parse_amount(r, a) for r, a in spec["quota"].items()}
        expected += vc_queue_manifests(vc, quota, kube.get("cohort"), flavors)
        if kube.get("network_policy") is not None:
            fence_settings = KubeSettings.model_validate(
                {"network_policy": {**kube["network_policy"], "hub_namespace": NS}}
            )
            expected += vc_network_policies(vc, fence_settings.network_policy.fence())
    rendered = [
        o
        for kind in (
            "Namespace",
            "ResourceFlavor",
            "ClusterQueue",
            "LocalQueue",
            "WorkloadPriorityClass",
            "NetworkPolicy",
        )
        for o in objects.get(kind, [])
        if not (kind == "NetworkPolicy" and o["metadata"]["name"] == "yitong-platform")
    ]
    key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])  # noqa: E731
    assert len({key(o) for o in rendered}) == len(rendered)
    # the builder repeats the flavors each VC uses
    assert {key(o): _normal(o) for o in rendered} == {key(o): _normal(o) for o in expected}


def test_resource_quota_only_without_a_cohort(render):
    assert "ResourceQuota" not in by_kind(render({}))
    (quota,) = by_kind(render({"backends": {"kubernetes": {"cohort": None}}}))["ResourceQuota"]
    assert quota["metadata"]["namespace"] == "yitong-default"
    assert quota["spec"]["hard"] == {"requests.cpu": "16", "requests.memory": "64Gi", "requests.nvidia.com/gpu": "2"}


def test_values_devices_are_the_default_table():
    assert VALUES["devices"] == {k: dict(v) for k, v in DEFAULT_DEVICE_SETTINGS.items()}


def test_only_the_hub_and_proxy_reach_the_platform(render):
    objects = by_kind(render({}))
    (policy,) = [p for p in objects["NetworkPolicy"] if p["metadata"]["name"] == "yitong-platform"]
    assert policy["metadata"].get("namespace") is None  # the release's namespace
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert [p["podSelector"]["matchLabels"]["component"] for p in rule["from"]] == ["hub", "proxy"]
    assert all("namespaceSelector" not in p for p in rule["from"])
    # user pods live in the VCs' namespaces, whose fence lets them out to the proxy's port and DNS only
    fence = [p for p in objects["NetworkPolicy"] if p["metadata"]["name"] == "yitong-vc-fence"]
    assert fence
    for p in fence:
        ports = [port["port"] for rule in p["spec"]["egress"] for port in rule.get("ports", [])]
        assert sorted(set(ports)) == [53, 8000]


def test_rbac_scopes(render):
    vcs = by_kind(render({}))
    bindings = {(b["metadata"]["namespace"], b["subjects"][0]["name"]) for b in vcs["RoleBinding"]}
    assert bindings == {("yitong-default", "yitong-platform"), ("yitong-default", "hub")}
    assert {b["metadata"]["name"] for b in vcs["ClusterRoleBinding"]} == {"yitong-jupyterhub-platform-cluster"}
    cluster = by_kind(render({"platform": {"rbac": {"scope": "cluster"}}}))
    assert "RoleBinding" not in cluster
    assert len(cluster["ClusterRoleBinding"]) == 3


def test_names_the_hub_config_relies_on(render):
    from yitong_spawner import z2jh

    objects = by_kind(render({}))
    assert [s["metadata"]["name"] for s in objects["Service"]] == [z2jh.PLATFORM]
    hub = VALUES["jupyterhub"]["hub"]
    (mount,) = hub["extraVolumeMounts"]
    assert z2jh.SETTINGS_PATH == f"{mount['mountPath']}/settings.yaml"
    (volume,) = hub["extraVolumes"]
    assert volume["secret"]["secretName"] in {s["metadata"]["name"] for s in objects["Secret"]}
    assert "yitong" in hub["services"] and "configure(c)" in hub["extraConfig"]["yitong"]
    (deploy,) = objects["Deployment"]
    env = {e["name"]: e for e in deploy["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["JUPYTERHUB_API_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "hub",
        "key": "hub.services.yitong.apiToken",
    }


def test_z2jh_values_are_within_its_documented_keys():
    """Our `jupyterhub:` values over z2jh 4.4.0's defaults pass z2jh 4.4.0's schema; a typo does not."""

    def merged(ours: dict[str, Any]) -> dict[str, Any]:
        def merge(a: Any, b: Any) -> Any:
            if isinstance(a, dict) and isinstance(b, dict):
                return {**a, **{k: merge(a.get(k), v) for k, v in b.items()}}
            return b

        return merge(z2jh_defaults(), ours)

    validator = jsonschema.Draft7Validator(z2jh_schema())
    assert list(validator.iter_errors(merged(VALUES["jupyterhub"]))) == []
    wrong = copy.deepcopy(VALUES["jupyterhub"])
    wrong["hub"]["extraConfigs"] = wrong["hub"].pop("extraConfig")
    assert any("extraConfigs" in e.message for e in validator.iter_errors(merged(wrong)))


# a wrong value is refused by `helm install` (the schema) at the key the embedded default names
WRONG = [
    ({"service": {"port": "x"}}, "service.port", "/service/port"),
    ({"storage": {"bogus": 1}}, "storage.bogus", "/storage"),
    ({"storage": {"max_upload_bytes": "10Qi"}}, "storage.max_upload_bytes", "/storage/max_upload_bytes"),
    ({"vcs": {"Bad_Name": {}}}, "Bad_Name", "Bad_Name"),
    ({"vcs": {"default": {"quota": {"cpu": "2x"}}}}, "vcs.default.quota", "/vcs/default/quota/cpu"),
    ({"profiles": {"cpu-small": {"memory": "2Gx"}}}, "profiles.cpu-small.memory", "/profiles/cpu-small/memory"),
    ({"profiles": {"cpu-small": {"arch": "sparc"}}}, "profiles.cpu-small.arch", "/profiles/cpu-small/arch"),
    ({"devices": {"nvidia.com/gpu": {"dist_backend": "mpich"}}}, "devices.nvidia.com/gpu.dist_backend", "dist_backend"),
    ({"jobs": {"poll_interval": 0}}, "jobs.poll_interval", "/jobs/poll_interval"),
    ({"hub": {"port": "x"}}, "hub.port", "/hub/port"),
    ({"hub": {"adminusers": ["a"]}}, "hub: ", "/hub"),
    ({"profiles": [{"display_name": "x", "images": "y"}]}, "profiles[0]: unknown key(s) images", "/profiles/0"),
    ({"profiles": [{"description": "no name"}]}, "profiles[0]: needs a slug or a display_name", "/profiles/0"),
    ({"profiles": {"cpu-small": {"slug": "s", "cpu": 1}}}, "profiles.cpu-small: unknown key(s) cpu", "cpu-small"),
]


@pytest.mark.parametrize("patch, service_says, helm_says", WRONG, ids=[w[1] for w in WRONG])
def test_wrong_values_are_refused_like_the_embedded_default(render, patch, service_says, helm_says, tmp_path):
    from yitong_services.core.settings import SettingsError, load_settings
    from yitong_spawner.hubconfig import load_settings as hub_load

    settings = _merged(patch)
    for key in ("platform", "jupyterhub"):
        settings.pop(key)
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(settings))
    with pytest.raises((SettingsError, ValueError)) as embedded:
        load_settings(path, tmp_path)
        hub_load(path)
    assert service_says in str(embedded.value)
    import helm_python as helm

    with pytest.raises(helm.HelmValuesError) as chart:
        render(patch)
    assert helm_says in str(chart.value)


@pytest.mark.parametrize(
    "patch, sentence",
    [
        ({"vcs": {"default": {"profiles": ["cpu-small", "nope"]}}}, "VC default offers unknown profiles: nope"),
        ({"vcs": {"default": {"quota": {"amd.com/gpu": 1}}}}, "no Kueue ResourceFlavor covers amd.com/gpu"),
        ({"profiles": PROFILE_LIST[:2], "vcs": {"default": {"profiles": ["gpu-2"]}}}, "offers unknown profiles: gpu-2"),
        ({"profiles": [*PROFILE_LIST[:2], LAB], "vcs": {"default": {"profiles": ["lab", "lb-tf"]}}}, "profiles: lb-tf"),
        ({"profiles": [{**PROFILE_LIST[2], "vcs": ["nope"]}]}, "an entry names VC nope, which is not in vcs"),
    ],
)
def test_cross_checks_fail_with_the_services_sentence(render, patch, sentence):
    import helm_python as helm

    with pytest.raises(helm.HelmError, match=sentence):
        render(patch)
    values = _merged(patch)
    with pytest.raises(ValueError, match=sentence):
        Settings.model_validate({k: values[k] for k in ("profiles", "vcs")})
        vc = values["vcs"]["default"]
        vc_queue_manifests("default", {r: parse_amount(r, a) for r, a in vc["quota"].items()})


def test_values_schema_is_current():
    spec = importlib.util.spec_from_file_location("values_schema", CHART.parent / "values_schema.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (CHART / "values.schema.json").read_text() == module.text(), (
        "helm/yitong/values.schema.json is stale: run .venv/bin/python helm/values_schema.py"
    )
    assert module.main(["--check"]) == 0


def test_the_embedded_defaults_settings_file_is_valid_values(render):
    """Same keys: yitong.example.yaml, with the chart's backend, renders as the chart's values."""
    from helm_helpers import ROOT

    example = yaml.safe_load((ROOT / "yitong.example.yaml").read_text())
    example["backend"] = "kubernetes"
    settings = _settings(render(example))
    assert settings["profiles"]["gpu-1"] == {**example["profiles"]["gpu-1"]}
    assert settings["backends"]["local"] == example["backends"]["local"]
    assert settings["ssh"] == example["ssh"]


ISSUER = {"kind": "generic", "issuer": "https://sso.example.org"}
AUTH_CASES = [
    {"kind": "generic", "tenant_id": "t"},
    ISSUER,
    {**ISSUER, "client_id": "yitong"},
    {"kind": "generic", "client_id": "yitong", "client_secret": "s", "authorize_url": "https://sso.example.org/a"},
    {"kind": "azuread", "client_id": "yitong", "client_secret": "s"},
    {**ISSUER, "client_id": "yitong", "client_secret": "s"},
    {**ISSUER, "client_id": "yitong", "client_secret": "s", "allow_all": True},  # with the default groups
]


@pytest.mark.parametrize("auth", AUTH_CASES)
def test_auth_is_refused_with_the_hubs_sentence(render, auth):
    import helm_python as helm

    from yitong_spawner.oauth import AuthSettingsError, validate

    with pytest.raises(AuthSettingsError) as hub:
        validate(auth, {"groups": VALUES["groups"]})
    with pytest.raises(helm.HelmError) as chart:
        render({"auth": auth})
    assert str(hub.value) in str(chart.value)


def test_a_provider_without_groups_renders(render):
    auth = {**ISSUER, "client_id": "yitong", "client_secret": "s", "allowed_groups": ["staff"]}
    settings = _settings(render({"auth": auth, "groups": None}))
    assert settings["auth"] == auth and "groups" not in settings


def test_the_platform_may_touch_every_kind_its_runner_uses(render):
    """Each kind jobs/runner_kube.py calls the API for is granted: cluster-wide kinds by the cluster
    role, namespaced kinds by the role bound in each VC's namespace."""
    from yitong_services.jobs.runner_kube import PATHS

    roles = {r["metadata"]["name"]: r for r in by_kind(render({}))["ClusterRole"]}
    granted = {
        name: {(g, res) for rule in role["rules"] for g in rule["apiGroups"] for res in rule["resources"]}
        for name, role in roles.items()
    }
    for kind, (prefix, plural, namespaced) in PATHS.items():
        group = "" if prefix == "/api/v1" else prefix.split("/")[2]
        role = "yitong-jupyterhub-platform" if namespaced else "yitong-jupyterhub-platform-cluster"
        assert (group, plural) in granted[role], kind
    assert ("", "pods/log") in granted["yitong-jupyterhub-platform"]


@pytest.mark.parametrize(
    "patch, sentence",
    [
        ({"vcs": {"default": {"profiles": ["cpu-small", "nope"]}}}, "VC default offers unknown profiles: nope"),
        ({"profiles": PROFILE_LIST[:2], "vcs": {"default": {"profiles": ["gpu-2"]}}}, "offers unknown profiles: gpu-2"),
        ({"profiles": [{**PROFILE_LIST[2], "vcs": ["nope"]}]}, "an entry names VC nope, which is not in vcs"),
        ({"vcs": {"default": {"quota": {"amd.com/gpu": 1}}}}, "no Kueue ResourceFlavor covers amd.com/gpu"),
    ],
)
def test_lint_fails_where_render_fails(chart_dir, render, patch, sentence):
    """Helm's lint mode turns `fail` into a log line; the chart's checks (yitong.fail) are errors there too."""
    import helm_python as helm

    with pytest.raises(helm.HelmError, match=sentence):
        render(patch)
    report = helm.lint(str(chart_dir), patch, kube_version=f"v{K8S_VERSIONS[-1]}.0")
    assert any(sentence in e for e in report["errors"]), report


def test_a_z2jh_list_of_its_own_renders_as_the_docs_say(render, tmp_path):
    """docs/kubernetes.md: a z2jh profileList under `profiles`, with slugs of its own: the chart's VC
    default (which named the replaced cpu-small and gpu-1) offers the list's entries; the service
    and the hub read the rendered settings."""
    from yitong_services.core.settings import load_settings

    z2jh = [
        {
            "display_name": "Small",
            "slug": "small",
            "default": True,
            "kubespawner_override": {"cpu_limit": 1, "mem_limit": "2G"},
        },
        {"display_name": "GPU", "kubespawner_override": {"extra_resource_limits": {"nvidia.com/gpu": 1}}},
        {**LAB, "vcs": ["default"]},
    ]
    (secret,) = [o for o in render({"profiles": z2jh}) if o["kind"] == "Secret"]
    path = tmp_path / "settings.yaml"
    path.write_text(secret["stringData"]["settings.yaml"])
    assert yaml.safe_load(path.read_text())["vcs"]["default"]["profiles"] == ["small", "gpu"]
    service = load_settings(path, tmp_path)
    assert service.vcs["default"].profiles[:2] == ["small", "gpu"]
    assert all(p in service.profiles for p in service.vcs["default"].profiles)


def test_the_chart_profile_names_are_values_yaml_s():
    chart_names = re.search(
        r'define "yitong.chartProfiles" -}}(.*?){{', (CHART / "templates" / "_helpers.tpl").read_text()
    )
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert chart_names.group(1).split(",") == list(values["profiles"])


def test_a_profile_list_left_at_the_z2jh_key_is_warned_about(render):
    entry = {"display_name": "Small", "kubespawner_override": {"cpu_limit": 1}}
    out = render.chart.render(
        {"jupyterhub": {"singleuser": {"profileList": [entry]}}}, name="yitong", namespace="jupyterhub", is_install=True
    )
    (text,) = [t for p, t in out.items() if p.endswith("NOTES.txt")]
    assert "WARNING: jupyterhub.singleuser.profileList is ignored" in text
    assert "to the top-level\n`profiles`" in text
    out = render.chart.render({}, name="yitong", namespace="jupyterhub", is_install=True)
    assert "WARNING" not in next(t for p, t in out.items() if p.endswith("NOTES.txt"))
