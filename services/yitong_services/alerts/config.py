"""Pure builders: rules -> a Prometheus rule file, the scrape config, routes -> Alertmanager's config.

Each takes plain values and returns a dict that ``files.write_yaml`` writes; tests compare them with
dict literals and check them with ``promtool check rules`` / ``amtool check-config``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .kinds import KINDS, expression

GROUP = "yitong"
HISTORY = "yitong-history"
NOWHERE = "nowhere"


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    threshold: float | None
    severity: str
    for_seconds: int
    vc: str | None = None
    expr: str = ""
    description: str = ""


@dataclass(frozen=True)
class Route:
    id: int
    emails: tuple[str, ...]
    vc: str | None = None
    severities: tuple[str, ...] = ()


@dataclass(frozen=True)
class Paths:
    """Where the processes' files live (all under ``<data_dir>/alerts``)."""

    rules: str
    scrape_token: str
    webhook_secret: str


@dataclass(frozen=True)
class Targets:
    platform: str  # host:port of the platform service
    metrics_path: str  # <prefix>metrics
    prometheus: str
    alertmanager: str
    nodes: tuple[str, ...] = ()  # further node exporters (alerts.node_targets): no login sent to them
    node: str = ""  # the node exporter the platform starts (host:port), scraped with its login


@dataclass(frozen=True)
class Logins:
    """The daemons' logins as Prometheus sends them (``basic_auth``: username, password_file)."""

    prometheus: dict[str, str]
    alertmanager: dict[str, str]
    node: dict[str, str]


def _seconds(value: float) -> str:
    return f"{int(round(value))}s"


def _literal(text: str) -> str:
    """Text shown as is by Prometheus's Go templates (``{{`` would start an action): an admin's
    description is text, so that no description can break the rule file."""
    return re.sub(r"\{\{|\}\}", lambda m: "{{`" + m.group() + "`}}", text)


def rule_entry(rule: Rule, scrape_interval: float, node_job: str = "node") -> dict[str, Any]:
    """One alerting rule of the rule file (``node_job``: the node exporters' scrape job)."""
    labels = {"severity": rule.severity, "yitong_rule": rule.name}
    if rule.vc is not None:
        labels["vc"] = rule.vc
    summary = KINDS[rule.kind].summary.format(threshold=rule.threshold)  # {threshold:g}, or none
    entry: dict[str, Any] = {
        "alert": rule.name,
        "expr": expression(rule.kind, rule.threshold, rule.vc, rule.expr, scrape_interval, node_job),
        "labels": labels,
        "annotations": {
            "summary": f"{_literal(rule.name)}: {summary}" + (f" in VC {rule.vc}" if rule.vc else ""),
            "description": _literal(rule.description) or "value {{ $value }}",
        },
    }
    if rule.for_seconds:
        entry["for"] = _seconds(rule.for_seconds)
    return entry


def rule_file(
    rules: Iterable[Rule], evaluation_interval: float, scrape_interval: float, node_job: str = "node"
) -> dict[str, Any]:
    """The Prometheus rule file: one group holding every rule, sorted by name (the spec of the Helm
    chart's PrometheusRule too, helm/yitong/templates/monitoring/prometheusrule.yaml)."""
    entries = [rule_entry(r, scrape_interval, node_job) for r in sorted(rules, key=lambda r: r.name)]
    return {"groups": [{"name": GROUP, "interval": _seconds(evaluation_interval), "rules": entries}]}


def _login(login: dict[str, str] | None) -> dict[str, Any]:
    return {"basic_auth": dict(login)} if login else {}


def prometheus_config(
    targets: Targets,
    paths: Paths,
    scrape_interval: float,
    evaluation_interval: float,
    logins: Logins | None = None,
) -> dict[str, Any]:
    """prometheus.yml: the platform's /metrics (with the platform's token), the node exporters,
    Prometheus and Alertmanager themselves; alerts go to the Alertmanager. With ``logins`` each of
    the platform's daemons is scraped (and Alertmanager sent alerts) with its own login; the
    further node exporters of ``targets.nodes`` are a job of their own, labelled ``job="node"``
    too, so that no login goes to them."""
    own = logins or Logins({}, {}, {})
    jobs: list[dict[str, Any]] = [
        {
            "job_name": "yitong",
            "metrics_path": targets.metrics_path,
            "authorization": {"type": "Bearer", "credentials_file": paths.scrape_token},
            "static_configs": [{"targets": [targets.platform]}],
        },
        {"job_name": "prometheus", **_login(own.prometheus), "static_configs": [{"targets": [targets.prometheus]}]},
        {
            "job_name": "alertmanager",
            **_login(own.alertmanager),
            "static_configs": [{"targets": [targets.alertmanager]}],
        },
    ]
    further = list(targets.nodes)
    if targets.node and own.node:
        jobs.append({"job_name": "node", **_login(own.node), "static_configs": [{"targets": [targets.node]}]})
        if further:
            # the job label set on the targets: the kinds' PromQL reads job="node" for every node
            jobs.append(
                {"job_name": "node-targets", "static_configs": [{"targets": further, "labels": {"job": "node"}}]}
            )
    elif targets.node or further:
        nodes = ([targets.node] if targets.node else []) + further
        jobs.append({"job_name": "node", "static_configs": [{"targets": nodes}]})
    return {
        "global": {
            "scrape_interval": _seconds(scrape_interval),
            "scrape_timeout": _seconds(min(10.0, scrape_interval)),
            "evaluation_interval": _seconds(evaluation_interval),
        },
        "rule_files": [paths.rules],
        "alerting": {
            "alertmanagers": [{**_login(own.alertmanager), "static_configs": [{"targets": [targets.alertmanager]}]}]
        },
        "scrape_configs": jobs,
    }


def receiver_name(route: Route) -> str:
    return f"route-{route.id}"


def alertmanager_config(
    routes: Iterable[Route],
    webhook_url: str,
    paths: Paths,
    smtp: Mapping[str, Any],
    *,
    group_wait: float,
    group_interval: float,
    repeat_interval: float,
) -> dict[str, Any]:
    """alertmanager.yml: every alert to the platform's history webhook; each route's emails for
    its VC's alerts (``vc`` label) or for all (a cluster-wide route), optionally by severity.
    Email receivers are left out while no SMTP host is set."""
    receivers: list[dict[str, Any]] = [
        {"name": NOWHERE},
        {
            "name": HISTORY,
            "webhook_configs": [
                {
                    "url": webhook_url,
                    "send_resolved": True,
                    "http_config": {"authorization": {"type": "Bearer", "credentials_file": paths.webhook_secret}},
                }
            ],
        },
    ]
    children: list[dict[str, Any]] = [{"receiver": HISTORY, "continue": True}]
    email = bool(smtp.get("host"))
    for route in sorted(routes, key=lambda r: r.id):
        if not email or not route.emails:
            continue
        matchers = []
        if route.vc is not None:
            matchers.append(f"vc={_quoted(route.vc)}")
        if route.severities:
            matchers.append(f"severity=~{_quoted('|'.join(route.severities))}")
        receivers.append(
            {
                "name": receiver_name(route),
                "email_configs": [{"to": address, "send_resolved": True} for address in route.emails],
            }
        )
        child: dict[str, Any] = {"receiver": receiver_name(route), "continue": True}
        if matchers:
            child["matchers"] = matchers
        children.append(child)
    config: dict[str, Any] = {
        "route": {
            "receiver": NOWHERE,
            "group_by": ["alertname", "vc"],
            "group_wait": _seconds(group_wait),
            "group_interval": _seconds(group_interval),
            "repeat_interval": _seconds(repeat_interval),
            "routes": children,
        },
        "receivers": receivers,
    }
    if email:
        glob: dict[str, Any] = {
            "smtp_smarthost": f"{smtp['host']}:{smtp.get('port', 25)}",
            "smtp_from": smtp.get("sender", "yitong@localhost"),
            "smtp_require_tls": bool(smtp.get("tls")),
        }
        if smtp.get("username"):
            glob["smtp_auth_username"] = smtp["username"]
            glob["smtp_auth_password"] = smtp.get("password") or ""
        config["global"] = glob
    return config


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
