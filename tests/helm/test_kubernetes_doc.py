"""docs/kubernetes.md: its values file and its `helm lint` / `helm template` commands, run as written.

The commands run through Helm's SDK on the chart with the zero-to-jupyterhub stand-in
(helm_helpers.make_chart_dir), which is what `helm dependency build` would have put in charts/;
the cluster commands (kubectl, docker, helm install) need a cluster and are not run here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from helm_helpers import K8S_VERSIONS, ROOT, parse

DOC = (ROOT / "docs" / "kubernetes.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", DOC, flags=re.S)


def _values() -> dict[str, Any]:
    (text,) = [body for lang, body in BLOCKS if lang == "yaml" and body.startswith("# my-values.yaml")]
    return yaml.safe_load(text)


def _commands(verb: str) -> list[list[str]]:
    lines = [line.strip() for lang, body in BLOCKS if lang == "bash" for line in body.splitlines()]
    return [shlex.split(line.split(">")[0]) for line in lines if line.startswith(f"helm {verb} ")]


def _options(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    args, opts, it = [], {}, iter(argv[2:])
    for a in it:
        if a in ("-f", "-n", "--values", "--namespace"):
            opts[a.lstrip("-")[0]] = next(it)
        else:
            args.append(a)
    return args, opts


@pytest.fixture
def in_checkout(chart_dir, tmp_path, monkeypatch):
    """A directory where `helm/yitong` is the chart after `helm dependency build`, and my-values.yaml is saved."""
    (tmp_path / "helm").mkdir()
    (tmp_path / "helm" / "yitong").symlink_to(chart_dir)
    (tmp_path / "my-values.yaml").write_text(yaml.safe_dump(_values()))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_doc_has_the_commands():
    assert _commands("lint") and _commands("template") and _commands("dependency")


def test_helm_lint_as_written(in_checkout):
    for argv in _commands("lint"):
        (chart,), opts = _options(argv)
        values = yaml.safe_load(Path(opts["f"]).read_text())
        for version in K8S_VERSIONS:
            report = helm.lint(chart, values, strict=True, kube_version=f"v{version}.0")
            assert report["errors"] == [] and all(m["severity"] < 2 for m in report["messages"]), report


def test_helm_template_as_written(in_checkout):
    import kubernetes_validate

    (argv,) = _commands("template")
    (release, chart), opts = _options(argv)
    values = yaml.safe_load(Path(opts["f"]).read_text())
    objects = parse(helm.Chart.load(chart).render(values, name=release, namespace=opts["n"], is_install=True))
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "Service", "Secret", "ClusterQueue", "LocalQueue", "NetworkPolicy", "RoleBinding"} <= kinds
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"} == {"yitong-default", "yitong-vision"}
    for obj in objects:
        if not obj["apiVersion"].startswith("kueue."):
            kubernetes_validate.validate(obj, K8S_VERSIONS[-1], strict=True)
    (secret,) = [o for o in objects if o["kind"] == "Secret"]
    settings = yaml.safe_load(secret["stringData"]["settings.yaml"])
    assert settings["database"]["url"].startswith("postgresql+psycopg://")
    assert settings["devices"]["nvidia.com/gpu"]["node_selector"] == {"nvidia.com/gpu.present": "true"}
    assert settings["backends"]["kubernetes"]["network_policy"]["hub_namespace"] == opts["n"]
    (deploy,) = [o for o in objects if o["kind"] == "Deployment"]
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.org/yitong/service:0.1.0"
    assert deploy["spec"]["template"]["spec"]["volumes"][1] == {
        "name": "data",
        "nfs": {"server": "nfs.example.org", "path": "/export/yitong"},
    }


def test_the_refusal_shown_in_the_doc(in_checkout):
    (shown,) = [body for lang, body in BLOCKS if lang == "" and "don't meet the specifications" in body]
    values = _values()
    values["vcs"]["vision"]["quota"]["memory"] = "lots"
    with pytest.raises(helm.HelmValuesError) as e:
        helm.Chart.load("helm/yitong").render(values, name="yitong", namespace="yitong")
    for line in shown.removeprefix("Error: ").strip().splitlines():
        assert line in str(e.value)


def _block(first_line: str) -> dict[str, Any]:
    (text,) = [body for lang, body in BLOCKS if lang == "yaml" and body.startswith(first_line)]
    return yaml.safe_load(text)


def test_the_profile_list_example(in_checkout, tmp_path):
    """`profiles` as a z2jh profileList, over my-values.yaml: lint clean, and the service expands it."""
    from yitong_services.core.settings import load_settings

    values = _values()
    values.update(_block("# profile-list-values.yaml"))
    report = helm.lint("helm/yitong", values, strict=True, kube_version=f"v{K8S_VERSIONS[-1]}.0")
    assert report["errors"] == [] and all(m["severity"] < 2 for m in report["messages"]), report
    objects = parse(helm.Chart.load("helm/yitong").render(values, name="yitong", namespace="yitong", is_install=True))
    (secret,) = [o for o in objects if o["kind"] == "Secret"]
    path = tmp_path / "settings.yaml"
    path.write_text(secret["stringData"]["settings.yaml"])
    service = load_settings(path, tmp_path)
    assert service.vcs["vision"].profiles == ["cpu-small", "gpu-1", "lab-torch", "lab-tf"]
    assert service.profiles["gpu-1"].accelerator.count == 1


def test_the_monitoring_example(in_checkout):
    """monitoring-values.yaml over my-values.yaml: the ServiceMonitor, the PrometheusRule without the
    dropped default, and the Prometheus let in by the platform's NetworkPolicy."""
    from helm_helpers import by_kind

    values = _values()
    values["platform"] = {**values["platform"], **_block("# monitoring-values.yaml")["platform"]}
    objects = by_kind(
        parse(helm.Chart.load("helm/yitong").render(values, name="yitong", namespace="yitong", is_install=True))
    )
    (monitor,) = objects["ServiceMonitor"]
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (rule,) = objects["PrometheusRule"]
    names = [r["alert"] for r in rule["spec"]["groups"][0]["rules"]]
    assert names == ["gpu-idle", "job-failed", "node-memory", "service-down"]
    (policy,) = [p for p in objects["NetworkPolicy"] if p["metadata"]["name"] == "yitong-platform"]
    assert policy["spec"]["ingress"][-1]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }
