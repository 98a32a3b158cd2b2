"""``yt deploy create|roll|scale|ls|show|delete``: model versions served over the Open Inference Protocol;
``yt deploy key create|ls|revoke``: an admin's keys for callers outside the endpoint's VC."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from yitong_lab.cli.data import refusing
from yitong_lab.cli.output import fields, table


def _endpoints(client: Any) -> Any:
    from yitong_lab.models.sdk import Endpoints

    return Endpoints(client)


REPLICAS = "replicas per version (1-8), each a job holding the profile under the VC's quota"


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("deploy", help="serve model versions as V2 inference endpoints")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, func: Callable, help: str) -> Any:
        sub = verbs.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(func=refusing(func))
        return sub

    sub = verb("create", create, "serve a model version (VC/NAME[@REF]) as an endpoint")
    sub.add_argument("name", metavar="ENDPOINT")
    sub.add_argument("model", metavar="VC/NAME[@REF]")
    sub.add_argument("--profile", default="cpu-small", help="the resources each replica holds in the VC (a profile)")
    sub.add_argument("--replicas", type=int, default=1, metavar="N", help=REPLICAS)
    sub.add_argument("--wait", type=float, default=60, metavar="SECONDS", help="wait until ready (0: do not)")
    sub = verb("roll", roll, "roll an endpoint to another version of its model, or give it a canary share")
    sub.add_argument("name", metavar="ENDPOINT")
    sub.add_argument("model", metavar="VC/NAME[@REF]")
    sub.add_argument("--canary", type=int, metavar="PERCENT", help="the new version's share (1-100); default: all")
    sub.add_argument("--profile", help="the new replicas' resources (default: the current replicas')")
    sub.add_argument("--replicas", type=int, metavar="N", help=REPLICAS + " (default: the current count)")
    sub.add_argument("--wait", type=float, default=120, metavar="SECONDS", help="wait until rolled (0: do not)")
    sub = verb("scale", scale, "run another number of replicas of every version with a share")
    sub.add_argument("name", metavar="ENDPOINT")
    sub.add_argument("replicas", metavar="N", type=int, help=REPLICAS)
    sub.add_argument("--wait", type=float, default=0, metavar="SECONDS", help="wait until every replica is ready")
    verb("ls", ls, "endpoints of your VCs")
    sub = verb("show", show, "one endpoint and its state")
    sub.add_argument("name", metavar="ENDPOINT")
    sub = verb("delete", delete, "stop an endpoint and release its allocation")
    sub.add_argument("name", metavar="ENDPOINT")
    keys = verbs.add_parser("key", help="admin: keys for callers outside the endpoint's VC")
    key_verbs = keys.add_subparsers(dest="key_verb", metavar="VERB", required=True)

    def key_verb(name: str, func: Callable, help: str) -> Any:
        sub = key_verbs.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(func=refusing(func))
        sub.add_argument("name", metavar="ENDPOINT")
        return sub

    sub = key_verb("create", key_create, "issue a key for one endpoint (shown once)")
    sub.add_argument("--note", default="", help="who the key is for")
    key_verb("ls", key_ls, "an endpoint's keys (never the keys themselves)")
    sub = key_verb("revoke", key_revoke, "revoke a key at once")
    sub.add_argument("key_id", metavar="ID", type=int)


def _text(e: dict[str, Any]) -> str:
    return fields(
        [
            ("Endpoint", e["name"]),
            ("Model", f"{e['model']} v{e['version']}"),
            ("VC", e["vc"]),
            ("Owner", e["owner"]),
            ("State", e["state"] + (f" ({e['reason']})" if e.get("reason") else "")),
            ("Traffic", ", ".join(f"{v} {p}%" for v, p in sorted(e.get("traffic", {}).items())) or "-"),
            ("Replicas", _replicas(e)),
            ("URL", e["url"]),
        ]
    )


def _replicas(e: dict[str, Any]) -> str:
    """``2 per version: v1 job 12 running (routed), v1 job 13 queued (waiting: ...)``"""
    parts = []
    for r in e.get("replicas", []):
        what = "routed" if r["routed"] else "draining" if r["draining"] else r.get("job_reason", "")
        parts.append(f"v{r['version']} job {r['job']} {r['job_state']}" + (f" ({what})" if what else ""))
    return f"{e.get('scale', 1)} per version" + (": " + ", ".join(parts) if parts else "")


def create(args: Any, client: Any, out: Any) -> None:
    e = _endpoints(client).create(args.name, args.model, args.profile, wait=args.wait, replicas=args.replicas)
    out.show(e, f"endpoint {e['name']} serves {e['model']} v{e['version']}: {e['state']}")


def roll(args: Any, client: Any, out: Any) -> None:
    e = _endpoints(client).deploy(
        args.name, args.model, canary=args.canary, profile=args.profile, wait=args.wait, replicas=args.replicas
    )
    shares = ", ".join(f"{v} {p}%" for v, p in sorted(e["traffic"].items()))
    out.show(e, f"endpoint {e['name']}: {shares}: {e['state']}" + (f" ({e['reason']})" if e["reason"] else ""))


def scale(args: Any, client: Any, out: Any) -> None:
    e = _endpoints(client).scale(args.name, args.replicas, wait=args.wait)
    out.show(
        e,
        f"endpoint {e['name']}: {e['scale']} replicas per version: {e['state']}"
        + (f" ({e['reason']})" if e["reason"] else ""),
    )


def ls(args: Any, client: Any, out: Any) -> None:
    rows = _endpoints(client).list()
    text = table(
        ["ENDPOINT", "MODEL", "VERSION", "VC", "STATE"],
        [[e["name"], e["model"], f"v{e['version']}", e["vc"], e["state"]] for e in rows],
    )
    out.show(rows, text if rows else "no endpoints: yt deploy create NAME VC/MODEL[@REF]")


def show(args: Any, client: Any, out: Any) -> None:
    e = _endpoints(client).get(args.name)
    out.show(e, _text(e))


def delete(args: Any, client: Any, out: Any) -> None:
    _endpoints(client).delete(args.name)
    out.show({"deleted": args.name}, f"deleted endpoint {args.name}")


def key_create(args: Any, client: Any, out: Any) -> None:
    k = _endpoints(client).create_key(args.name, note=args.note)
    out.show(k, f"key {k['id']} for endpoint {k['endpoint']} (shown once, keep it safe):\n{k['key']}")


def key_ls(args: Any, client: Any, out: Any) -> None:
    rows = _endpoints(client).keys(args.name)
    text = table(
        ["ID", "PREFIX", "NOTE", "BY", "STATE"],
        [
            [str(k["id"]), k["prefix"] + "...", k["note"], k["created_by"], "revoked" if k["revoked"] else "in use"]
            for k in rows
        ],
    )
    out.show(rows, text if rows else f"endpoint {args.name} has no keys: yt deploy key create {args.name}")


def key_revoke(args: Any, client: Any, out: Any) -> None:
    _endpoints(client).revoke_key(args.name, args.key_id)
    out.show({"revoked": args.key_id}, f"revoked key {args.key_id} of endpoint {args.name}")
