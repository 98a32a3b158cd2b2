"""The pure builders: rule kinds -> PromQL, rules -> the rule file, routes -> Alertmanager's config,
checked against dict literals and by Prometheus's own tools (``promtool check rules``, ``promtool
test rules``, ``amtool check-config``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import require

from yitong_services.alerts import kinds
from yitong_services.alerts.config import (
    Paths,
    Route,
    Rule,
    Targets,
    alertmanager_config,
    prometheus_config,
    rule_entry,
    rule_file,
)

PATHS = Paths(rules="/d/alerts/rules.yml", scrape_token="/d/alerts/scrape-token", webhook_secret="/d/alerts/ws")
SMTP = {"host": "mail.example.com", "port": 587, "sender": "yt@example.com", "tls": True}


@pytest.mark.parametrize(
    "kind,threshold,vc,expected",
    [
        (
            "node_memory",
            70,
            None,
            '100 * (1 - node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"}) > 70',
        ),
        (
            "node_cpu",
            90,
            None,
            '100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{job="node",mode="idle"}[60s]))) > 90',
        ),
        ("accelerator_utilization", 95, None, "yitong_accelerator_utilization_percent > 95"),
        (
            "accelerator_idle",
            0,
            "vision",
            '(yitong_accelerator_allocated{vc="vision"} == 1)'
            " and on (node, index) (yitong_accelerator_utilization_percent <= 0)",
        ),
        ("job_failed", 1, "nlp", 'yitong_jobs_failed_recent{vc="nlp"} >= 1'),
        ("job_failed", 3, None, "yitong_jobs_failed_recent >= 3"),
        ("quota_exhausted", 90, None, "100 * yitong_vc_used / (yitong_vc_quota > 0) >= 90"),
        ("service_down", None, None, "up == 0"),
    ],
)
def test_expressions(kind, threshold, vc, expected):
    assert kinds.expression(kind, threshold, vc, "", 15) == expected


@pytest.mark.parametrize(
    "kind,threshold,vc,expr,message",
    [
        ("disk", None, None, "", "unknown rule kind 'disk'"),
        ("node_memory", 170, None, "", "the threshold of a node_memory rule is % from 0 to 100"),
        ("node_memory", float("nan"), None, "", "the threshold of a node_memory rule is % from 0 to 100"),
        ("job_failed", 0, None, "", "the threshold of a job_failed rule is jobs from 1 to 1e+06"),
        ("node_cpu", 50, "vision", "", "a node_cpu rule is cluster-wide: leave vc out"),
        ("service_down", 1, None, "", "a service_down rule takes no threshold"),
        ("expression", None, None, " ", "an expression rule needs expr, a PromQL condition"),
        ("node_memory", 70, None, "up", "only expression rules take expr"),
    ],
)
def test_refused_rules(kind, threshold, vc, expr, message):
    with pytest.raises(kinds.RuleError, match=None) as e:
        kinds.check(kind, threshold, vc, expr)
    assert str(e.value).startswith(message)


def test_defaults_and_quick_syntax():
    assert kinds.check("node_memory", None, None, "") == 70
    assert kinds.check("service_down", None, None, "") is None
    assert kinds.quick_syntax('sum(rate(x{a="("}[5m]))') is None
    assert kinds.quick_syntax("sum(up") == "the expression has an unclosed bracket or quote"
    assert kinds.quick_syntax("up]") == "unbalanced ']' in the expression"


def test_rule_entry():
    rule = Rule("vision-gpus", "quota_exhausted", 100, "critical", 120, vc="vision", description="{{ not a template }}")
    assert rule_entry(rule, 15) == {
        "alert": "vision-gpus",
        "expr": '100 * yitong_vc_used{vc="vision"} / (yitong_vc_quota{vc="vision"} > 0) >= 100',
        "labels": {"severity": "critical", "yitong_rule": "vision-gpus", "vc": "vision"},
        "annotations": {
            "summary": "vision-gpus: a VC uses at least 100% of a quota in VC vision",
            "description": "{{`{{`}} not a template {{`}}`}}",
        },
        "for": "120s",
    }


def test_alertmanager_config():
    routes = [
        Route(2, ("a@example.com", "b@example.com"), vc="vision", severities=("critical",)),
        Route(1, ("c@x.io",)),
    ]
    assert alertmanager_config(
        routes, "http://127.0.0.1:8010/hook", PATHS, SMTP, group_wait=10, group_interval=60, repeat_interval=3600
    ) == {
        "route": {
            "receiver": "nowhere",
            "group_by": ["alertname", "vc"],
            "group_wait": "10s",
            "group_interval": "60s",
            "repeat_interval": "3600s",
            "routes": [
                {"receiver": "yitong-history", "continue": True},
                {"receiver": "route-1", "continue": True},
                {"receiver": "route-2", "continue": True, "matchers": ['vc="vision"', 'severity=~"critical"']},
            ],
        },
        "receivers": [
            {"name": "nowhere"},
            {
                "name": "yitong-history",
                "webhook_configs": [
                    {
                        "url": "http://127.0.0.1:8010/hook",
                        "send_resolved": True,
                        "http_config": {"authorization": {"type": "Bearer", "credentials_file": "/d/alerts/ws"}},
                    }
                ],
            },
            {"name": "route-1", "email_configs": [{"to": "c@x.io", "send_resolved": True}]},
            {
                "name": "route-2",
                "email_configs": [
                    {"to": "a@example.com", "send_resolved": True},
                    {"to": "b@example.com", "send_resolved": True},
                ],
            },
        ],
        "global": {"smtp_smarthost": "mail.example.com:587", "smtp_from": "yt@example.com", "smtp_require_tls": True},
    }
    # no SMTP host: the history webhook only
    config = alertmanager_config(routes, "http://h/", PATHS, {}, group_wait=1, group_interval=1, repeat_interval=60)
    assert [r["name"] for r in config["receivers"]] == ["nowhere", "yitong-history"] and "global" not in config


def _tool(name: str) -> str:
    path = shutil.which(name)
    require(
        name,
        path is not None,
        f"install the Debian package {'prometheus-alertmanager' if name == 'amtool' else 'prometheus'}",
    )
    assert path
    return path


def _run(*argv: str, cwd: Path | None = None) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


ALL_KINDS = [
    Rule("mem", "node_memory", 70, "warning", 60, description="memory {{ high }}"),
    Rule("cpu", "node_cpu", 90, "warning", 300),
    Rule("busy", "accelerator_utilization", 95, "info", 0),
    Rule("idle", "accelerator_idle", 0, "warning", 1800, vc="vision"),
    Rule("failed", "job_failed", 1, "warning", 0, vc="nlp"),
    Rule("quota", "quota_exhausted", 100, "critical", 0),
    Rule("down", "service_down", None, "critical", 60),
    Rule("custom", "expression", None, "info", 0, expr="sum by (vc) (yitong_vc_queue_length) > 10"),
]


def test_promtool_checks_every_kind(tmp_path):
    promtool = _tool("promtool")
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rule_file(ALL_KINDS, 15, 15)))
    assert "SUCCESS: 8 rules found" in _run(promtool, "check", "rules", str(path))
    targets = Targets("127.0.0.1:8010", "/services/yitong/metrics", "127.0.0.1:9090", "127.0.0.1:9093", ("n1:9100",))
    paths = Paths(rules=str(path), scrape_token=str(tmp_path / "token"), webhook_secret=str(tmp_path / "ws"))
    (tmp_path / "token").write_text("t")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(prometheus_config(targets, paths, 15, 15)))
    _run(promtool, "check", "config", str(tmp_path / "prometheus.yml"))


def test_amtool_checks_the_config(tmp_path):
    amtool = _tool("amtool")
    routes = [Route(1, ("ops@example.com",), vc="vision"), Route(2, ("all@example.com",), severities=("critical",))]
    paths = Paths(rules="", scrape_token="", webhook_secret=str(tmp_path / "ws"))
    (tmp_path / "ws").write_text("secret")
    smtp = SMTP | {"username": "yt", "password": "pw"}
    config = alertmanager_config(
        routes, "http://127.0.0.1:1/h", paths, smtp, group_wait=1, group_interval=1, repeat_interval=60
    )
    (tmp_path / "am.yml").write_text(yaml.safe_dump(config))
    assert "SUCCESS" in _run(amtool, "check-config", str(tmp_path / "am.yml"))


PROMTOOL_TEST = """
rule_files: [rules.yml]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'node_memory_MemTotal_bytes{job="node",instance="n1:9100"}'
        values: '100+0x20'
      - series: 'node_memory_MemAvailable_bytes{job="node",instance="n1:9100"}'
        values: '50+0x4 20+0x16'  # 50% used, then 80% from 75s on
      - series: 'yitong_vc_used{vc="vision",resource="nvidia.com/gpu"}'
        values: '1+0x4 2+0x16'
      - series: 'yitong_vc_quota{vc="vision",resource="nvidia.com/gpu"}'
        values: '2+0x20'
      - series: 'yitong_vc_used{vc="nlp",resource="nvidia.com/gpu"}'
        values: '1+0x20'
      - series: 'yitong_vc_quota{vc="nlp",resource="nvidia.com/gpu"}'
        values: '1+0x20'
    alert_rule_test:
      - eval_time: 2m  # above 70% for 45s, not yet the 60s the rule asks
        alertname: mem
        exp_alerts: []
      - eval_time: 3m
        alertname: mem
        exp_alerts:
          - exp_labels: {severity: warning, yitong_rule: mem, job: node, instance: "n1:9100"}
            exp_annotations:
              summary: "mem: node memory in use above 70%"
              description: "memory {{ high }}"
      - eval_time: 1m  # one GPU of two
        alertname: vision-gpus
        exp_alerts: []
      - eval_time: 2m  # both, from 75s on
        alertname: vision-gpus
        exp_alerts:
          - exp_labels: {severity: critical, yitong_rule: vision-gpus, vc: vision, resource: nvidia.com/gpu}
            exp_annotations:
              summary: "vision-gpus: a VC uses at least 100% of a quota in VC vision"
              description: "value 100"
"""


def test_promtool_test_rules(tmp_path):
    """Two rules evaluated by Prometheus's rule engine on series given here: node memory above 70%
    for a minute, and vision's quota exhausted (nlp's full quota does not fire vision's rule)."""
    promtool = _tool("promtool")
    rules = [
        Rule("mem", "node_memory", 70, "warning", 60, description="memory {{ high }}"),
        Rule("vision-gpus", "quota_exhausted", 100, "critical", 0, vc="vision"),
    ]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule_file(rules, 15, 15)))
    (tmp_path / "test.yml").write_text(PROMTOOL_TEST)
    assert "SUCCESS" in _run(promtool, "test", "rules", "test.yml", cwd=tmp_path)
