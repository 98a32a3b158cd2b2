"""``yt alert status|ls|add|set|rm|routes|route|unroute|silence|silences|unsilence|history``: alert
rules, email routes, silences and the firing/resolved history (admins; docs/operations.md)."""

from __future__ import annotations

from typing import Any

from yitong_lab.cli.grammar import UsageError
from yitong_lab.cli.job import refusing
from yitong_lab.cli.output import table

KINDS = (
    "node_memory",
    "node_cpu",
    "accelerator_utilization",
    "accelerator_idle",
    "job_failed",
    "quota_exhausted",
    "storage_quota",
    "disk_full",
    "disk_free",
    "service_down",
    "expression",
)


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("alert", help="alert rules, email routes, silences, history (admin)")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, func: Any, help: str) -> Any:
        sub = verbs.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(func=refusing(func))
        return sub

    verb("status", status, "whether Prometheus and Alertmanager run, and what to install if not")
    verb("ls", ls, "the alert rules")
    add = verb("add", add_rule, "add a rule: yt alert add NAME KIND [THRESHOLD] [--vc VC] [--for 300]")
    add.add_argument("name", metavar="NAME")
    add.add_argument("kind", metavar="KIND", choices=KINDS, help=", ".join(KINDS))
    add.add_argument("threshold", metavar="THRESHOLD", nargs="?", type=float, help="percent, or jobs for job_failed")
    add.add_argument("--vc", help="the VC the rule watches (default: cluster-wide)")
    add.add_argument("--expr", default="", help="expression rules: a PromQL condition")
    add.add_argument("--severity", default="warning", choices=("info", "warning", "critical"))
    add.add_argument("--for", dest="for_seconds", type=int, default=0, metavar="SECONDS")
    add.add_argument("--description", default="")
    edit = verb("set", set_rule, "change a rule's threshold, severity, duration or description")
    edit.add_argument("name", metavar="NAME")
    edit.add_argument("--threshold", type=float)
    edit.add_argument("--severity", choices=("info", "warning", "critical"))
    edit.add_argument("--for", dest="for_seconds", type=int, metavar="SECONDS")
    edit.add_argument("--description")
    rm = verb("rm", rm_rule, "delete a rule")
    rm.add_argument("name", metavar="NAME")
    verb("routes", routes, "who gets email for which VC")
    route = verb("route", add_route, "email addresses for a VC's alerts (without --vc: every alert)")
    route.add_argument("emails", metavar="EMAIL", nargs="+")
    route.add_argument("--vc")
    route.add_argument("--severity", dest="severities", action="append", choices=("info", "warning", "critical"))
    unroute = verb("unroute", rm_route, "delete a route")
    unroute.add_argument("route_id", metavar="ID", type=int)
    silence = verb("silence", add_silence, "silence alerts: yt alert silence vc=vision --for 3600 -m 'upgrade'")
    silence.add_argument("matchers", metavar="LABEL=VALUE", nargs="+")
    silence.add_argument("--for", dest="seconds", type=int, default=3600, metavar="SECONDS")
    silence.add_argument("-m", "--comment", required=True)
    verb("silences", silences, "Alertmanager's silences")
    unsilence = verb("unsilence", rm_silence, "end a silence now")
    unsilence.add_argument("silence_id", metavar="ID")
    history = verb("history", show_history, "alerts as they fired and resolved, newest first")
    history.add_argument("--vc")
    history.add_argument("--status", choices=("firing", "resolved"))
    history.add_argument("--limit", type=int, default=50)


def status(args: Any, client: Any, out: Any) -> None:
    s = client.alert_status()
    rows = [[name, c["state"], c["url"] or "-", c["detail"]] for name, c in s.items() if isinstance(c, dict)]
    text = table(["PROCESS", "STATE", "URL", "DETAIL"], rows)
    text += f"\nemail: {'on' if s['email'] else 'off'}; accelerator figures: {'on' if s['accelerators'] else 'absent'}"
    if s["message"]:
        text += f"\n{s['message']}"
    out.show(s, text)


def _threshold(rule: dict[str, Any]) -> str:
    return "-" if rule["threshold"] is None else f"{rule['threshold']:g}"


def ls(args: Any, client: Any, out: Any) -> None:
    rules = client.alert_rules()
    rows = [
        [r["name"], r["kind"], _threshold(r), r["vc"] or "(cluster)", r["severity"], f"{r['for_seconds']}s"]
        for r in rules
    ]
    out.show(rules, table(["NAME", "KIND", "THRESHOLD", "VC", "SEVERITY", "FOR"], rows) if rules else "no rules")


def add_rule(args: Any, client: Any, out: Any) -> None:
    rule = client.create_alert_rule(
        args.name,
        args.kind,
        args.threshold,
        vc=args.vc,
        expr=args.expr,
        severity=args.severity,
        for_seconds=args.for_seconds,
        description=args.description,
    )
    out.show(rule, f"rule {rule['name']}: {rule['promql']}")


def set_rule(args: Any, client: Any, out: Any) -> None:
    changes = {
        k: getattr(args, k)
        for k in ("threshold", "severity", "for_seconds", "description")
        if getattr(args, k) is not None
    }
    if not changes:
        raise UsageError("nothing to change: give --threshold, --severity, --for or --description")
    rule = client.update_alert_rule(args.name, **changes)
    out.show(rule, f"rule {rule['name']}: {rule['promql']}")


def rm_rule(args: Any, client: Any, out: Any) -> None:
    client.delete_alert_rule(args.name)
    out.show({"deleted": args.name}, f"deleted rule {args.name}")


def routes(args: Any, client: Any, out: Any) -> None:
    items = client.alert_routes()
    rows = [
        [str(r["id"]), r["vc"] or "(every alert)", ", ".join(r["emails"]), ", ".join(r["severities"]) or "all"]
        for r in items
    ]
    out.show(items, table(["ID", "VC", "EMAILS", "SEVERITIES"], rows) if items else "no routes")


def add_route(args: Any, client: Any, out: Any) -> None:
    route = client.create_alert_route(args.emails, vc=args.vc, severities=args.severities)
    out.show(route, f"route {route['id']}: {route['vc'] or 'every alert'} -> {', '.join(route['emails'])}")


def rm_route(args: Any, client: Any, out: Any) -> None:
    client.delete_alert_route(args.route_id)
    out.show({"deleted": args.route_id}, f"deleted route {args.route_id}")


def add_silence(args: Any, client: Any, out: Any) -> None:
    matchers = {}
    for item in args.matchers:
        label, sep, value = item.partition("=")
        if not sep or not label or not value:
            raise ValueError(f"{item!r} is not LABEL=VALUE (example: vc=vision)")
        matchers[label] = value
    s = client.silence(matchers, args.seconds, args.comment)
    out.show(s, f"silence {s['id']} until {s['ends_at']}")


def silences(args: Any, client: Any, out: Any) -> None:
    items = client.silences()
    rows = [
        [s["id"], ",".join(f"{k}={v}" for k, v in s["matchers"].items()), s["state"], s["ends_at"], s["comment"]]
        for s in items
    ]
    out.show(items, table(["ID", "MATCHERS", "STATE", "ENDS", "COMMENT"], rows) if items else "no silences")


def rm_silence(args: Any, client: Any, out: Any) -> None:
    client.expire_silence(args.silence_id)
    out.show({"expired": args.silence_id}, f"ended silence {args.silence_id}")


def show_history(args: Any, client: Any, out: Any) -> None:
    page = client.alert_history(vc=args.vc, status=args.status, limit=args.limit)
    rows = [
        [
            e["received"][:19],
            e["status"],
            e["alertname"],
            e["vc"] or "-",
            e["severity"],
            e["annotations"].get("summary", ""),
        ]
        for e in page["items"]
    ]
    text = table(["RECEIVED", "STATUS", "ALERT", "VC", "SEVERITY", "SUMMARY"], rows) if rows else "no alerts yet"
    out.show(page, text)
