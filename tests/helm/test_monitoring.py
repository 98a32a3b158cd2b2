"""The chart's objects for clusters that run the Prometheus operator (off by default): a
ServiceMonitor scraping the platform's /metrics as the platform's own prometheus.yml does, and a
PrometheusRule whose spec is the platform's rule file (alerts/config.py ``rule_file``) for the same
rules; both strictly valid for prometheus-operator 0.93.0's CRD schemas (tests/helm/data); a rule
the service refuses fails with the service's sentence."""

from __future__ import annotations

import importlib.util

import pytest
import yaml
from helm_helpers import CHART, by_kind, crd_validators

from yitong_services.alerts.config import Paths, Rule, Targets, prometheus_config, rule_file
from yitong_services.alerts.kinds import RuleError, check

VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
CRDS = crd_validators("prometheus-operator/v1.json")
ON = {"enabled": True}


def _monitoring(**kw) -> dict:
    return {"platform": {"monitoring": kw}}


def _rules(values_rules: dict, evaluation: float, scrape: float, node_job: str) -> dict:
    """What the platform writes for these rules (the API stores the checked threshold)."""
    rules = []
    for name, r in values_rules.items():
        if r is None:
            continue
        threshold = check(r["kind"], r.get("threshold"), r.get("vc"), r.get("expr", ""))
        rules.append(
            Rule(
                name,
                r["kind"],
                threshold,
                r.get("severity", "warning"),
                r.get("for_seconds", 0),
                r.get("vc"),
                r.get("expr", ""),
                r.get("description", ""),
            )
        )
    return rule_file(rules, evaluation, scrape, node_job)


def _errors(obj: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in CRDS[obj["kind"]].iter_errors(obj)]


def test_off_by_default(render):
    objects = by_kind(render({}))
    assert "ServiceMonitor" not in objects and "PrometheusRule" not in objects


RULES = {
    "mem": {"kind": "node_memory"},  # the kind's default threshold
    "cpu": {"kind": "node_cpu", "threshold": 85.5, "for_seconds": 90, "severity": "critical"},
    "gpu-busy": {"kind": "accelerator_utilization", "threshold": 99.25},
    "idle": {"kind": "accelerator_idle", "threshold": 0, "vc": "vision", "for_seconds": 1800},
    "failed": {"kind": "job_failed", "threshold": 1000000, "vc": "nlp", "description": "see {{ $labels.vc }} {{x}}"},
    "quota": {"kind": "quota_exhausted", "threshold": 99.1234567, "severity": "info"},
    "down": {"kind": "service_down", "for_seconds": 120},
    "custom": {"kind": "expression", "expr": "  sum by (vc) (yitong_vc_queue_length) > 10 ", "severity": "info"},
    "node-memory": None,  # values.yaml's, dropped
}


@pytest.mark.parametrize(
    "alerts, rules, node_job",
    [
        ({}, None, None),  # values.yaml's rules, the settings' default intervals
        ({"scrape_interval": 30, "evaluation_interval": 20.5}, RULES, "node"),
        ({"scrape_interval": 2, "evaluation_interval": 14.5}, {"only": {"kind": "node_cpu"}}, None),
    ],
    ids=["defaults", "every-kind", "short-intervals"],
)
def test_the_prometheus_rule_is_the_platforms_rule_file(render, alerts, rules, node_job):
    rule_values = {"enabled": True}
    if rules is not None:
        rule_values["rules"] = rules
    if node_job is not None:
        rule_values["nodeExporterJob"] = node_job
    (rule,) = by_kind(render({"alerts": alerts, **_monitoring(prometheusRule=rule_values)}))["PrometheusRule"]
    assert _errors(rule) == []
    merged = {**VALUES["platform"]["monitoring"]["prometheusRule"]["rules"], **(rules or {})}
    expected = _rules(
        merged,
        alerts.get("evaluation_interval", 15.0),
        alerts.get("scrape_interval", 15.0),
        node_job or "node-exporter",
    )
    assert rule["spec"] == expected
    assert rule["metadata"]["name"] == "yitong-platform"


def test_the_service_monitor_scrapes_as_the_platforms_prometheus(render):
    values = {"alerts": {"scrape_interval": 30}, **_monitoring(serviceMonitor={**ON, "labels": {"release": "kps"}})}
    objects = by_kind(render(values))
    (monitor,) = objects["ServiceMonitor"]
    assert _errors(monitor) == []
    assert monitor["metadata"]["labels"]["release"] == "kps"
    # it selects the platform's Service, on its named port
    (service,) = objects["Service"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    # the path and intervals of the platform's own prometheus.yml, with the platform's token
    own = prometheus_config(
        Targets("p:8010", "/services/yitong/metrics", "p:9090", "p:9093"), Paths("r", "t", "w"), 30, 15
    )
    assert endpoint["path"] == own["scrape_configs"][0]["metrics_path"]
    assert (endpoint["interval"], endpoint["scrapeTimeout"]) == (
        own["global"]["scrape_interval"],
        own["global"]["scrape_timeout"],
    )
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": "hub", "key": "hub.services.yitong.apiToken"},
    }


def test_the_crd_schemas_catch_a_wrong_field():
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "a"}}
    assert _errors({**monitor, "spec": {"selector": {}, "endpoints": [{"port": "http"}]}}) == []
    assert any("endpoint" in e for e in _errors({**monitor, "spec": {"selector": {}, "endpoint": []}}))


REFUSED = [
    {"kind": "node_memory", "threshold": 150},
    {"kind": "node_memory", "vc": "vision"},
    {"kind": "job_failed", "threshold": 0},
    {"kind": "service_down", "threshold": 1},
    {"kind": "expression", "expr": "  "},
    {"kind": "quota_exhausted", "expr": "up"},
]


@pytest.mark.parametrize("rule", REFUSED, ids=[str(r) for r in REFUSED])
def test_a_rule_the_service_refuses_fails_with_its_sentence(render, rule):
    import helm_python as helm

    with pytest.raises(RuleError) as service:
        check(rule["kind"], rule.get("threshold"), rule.get("vc"), rule.get("expr", ""))
    with pytest.raises(helm.HelmError) as chart:
        render(_monitoring(prometheusRule={**ON, "rules": {"bad": rule}}))
    assert f"platform.monitoring.prometheusRule.rules.bad: {service.value}" in str(chart.value)


@pytest.mark.parametrize(
    "rule, where",
    [
        ({"kind": "disk"}, "kind"),
        ({"kind": "node_cpu", "severity": "page"}, "severity"),
        ({"kind": "node_cpu", "for_seconds": -1}, "for_seconds"),
        ({"kind": "node_cpu", "treshold": 1}, "treshold"),
    ],
)
def test_the_values_schema_refuses_a_wrong_rule(render, rule, where):
    import helm_python as helm

    with pytest.raises(helm.HelmValuesError, match=where):
        render(_monitoring(prometheusRule={**ON, "rules": {"bad": rule}}))


def test_the_kinds_table_is_current():
    spec = importlib.util.spec_from_file_location("alert_kinds", CHART.parent / "alert_kinds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "helm/yitong/files/alert-kinds.json is stale: run helm/alert_kinds.py"
