"""``yt vc ls|show|create|edit|rm``: virtual clusters, their quotas and usage."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from yitong_lab.cli.grammar import UsageError
from yitong_lab.cli.output import vc_details, vcs_table

RESOURCES_HELP = "resource=amount, comma separated or repeated (cpu=8,memory=16Gi,nvidia.com/gpu=2)"


def resources(text: str) -> dict[str, str]:
    """argparse ``type=`` for ``cpu=8,memory=16Gi``: ``{"cpu": "8", "memory": "16Gi"}``.

    Only the ``name=amount`` list is split here; the amounts go to the platform as typed, which
    parses them and refuses a bad one with its sentence (exit 1)."""
    out: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, amount = item.partition("=")
        if not sep or not name.strip() or not amount.strip():
            raise argparse.ArgumentTypeError(f"{item!r} is not resource=amount (example: cpu=8,memory=16Gi)")
        out[name.strip()] = amount.strip()
    return out


class MergeResources(argparse.Action):
    """``--quota cpu=8 --quota memory=16Gi`` merges into one dict."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        merged = dict(getattr(namespace, self.dest) or {})
        merged.update(values)
        setattr(namespace, self.dest, merged)


def _settings(parser: argparse.ArgumentParser, editing: bool) -> None:
    parser.add_argument("name", metavar="NAME", help="VC name (a-z, 0-9, -)")
    parser.add_argument("--description", help="a sentence shown to members")
    parser.add_argument("--quota", type=resources, action=MergeResources, help=RESOURCES_HELP)
    parser.add_argument(
        "--storage-quota",
        metavar="BYTES",
        help="bytes the VC may keep in the dataset store and its job folders (500Gi, 2T; 'none': no limit)",
    )
    parser.add_argument(
        "--user-cap",
        dest="user_caps",
        type=resources,
        action=MergeResources,
        help="per-user cap inside the VC, e.g. nvidia.com/gpu=1",
    )
    verb = "replace the groups with" if editing else "hub group whose members belong (repeatable)"
    parser.add_argument("--group", dest="groups", action="append", metavar="G", help=verb)
    verb = "replace the profiles with" if editing else "profile the VC offers (repeatable)"
    parser.add_argument("--profile", dest="profiles", action="append", metavar="P", help=verb)
    if editing:
        for noun in ("group", "profile"):
            parser.add_argument(
                f"--add-{noun}",
                dest=f"add_{noun}s",
                action="append",
                default=[],
                metavar=noun[0].upper(),
                help=f"add a {noun} (repeatable)",
            )
            parser.add_argument(
                f"--remove-{noun}",
                dest=f"remove_{noun}s",
                action="append",
                default=[],
                metavar=noun[0].upper(),
                help=f"remove a {noun}",
            )


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("vc", help="virtual clusters: quotas, usage, membership")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    verbs.add_parser("ls", parents=[common], help="your VCs with quota, used and free").set_defaults(func=ls)
    show_parser = verbs.add_parser("show", parents=[common], help="one VC in detail")
    show_parser.add_argument("name", metavar="NAME")
    show_parser.set_defaults(func=show)
    create_parser = verbs.add_parser("create", parents=[common], help="create a VC (admin)")
    _settings(create_parser, editing=False)
    create_parser.set_defaults(func=create)
    edit_parser = verbs.add_parser("edit", parents=[common], help="change a VC (admin)")
    _settings(edit_parser, editing=True)
    edit_parser.set_defaults(func=edit)
    rm_parser = verbs.add_parser("rm", parents=[common], help="delete a VC (admin)")
    rm_parser.add_argument("name", metavar="NAME")
    rm_parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    rm_parser.set_defaults(func=rm)


def ls(args: Any, client: Any, out: Any) -> None:
    vcs = client.vcs()
    out.show(vcs, vcs_table(vcs) if vcs else "no VCs: ask an administrator to add you to one")


def show(args: Any, client: Any, out: Any) -> None:
    vc = client.vc(args.name)
    out.show(vc, vc_details(vc))


def create(args: Any, client: Any, out: Any) -> None:
    vc = client.create_vc(
        args.name,
        description=args.description or "",
        quota=args.quota,
        groups=args.groups,
        profiles=args.profiles,
        user_caps=args.user_caps,
    )
    if args.storage_quota is not None:
        vc = _set_storage_quota(client, args.name, args.storage_quota)
    out.show(vc, vc_details(vc))


def _set_storage_quota(client: Any, name: str, value: str) -> Any:
    """PATCH ``storage_quota`` (``none``: null, no limit); the platform parses the amount."""
    from urllib.parse import quote

    body = {"storage_quota": None if value.strip().lower() in ("none", "null", "") else value.strip()}
    return client.request("PATCH", f"/vcs/{quote(name, safe='')}", json=body)


def _edited(current: list[str], replace: list[str] | None, add: list[str], remove: list[str]):
    if replace is None and not add and not remove:
        return None
    values = list(current if replace is None else replace)
    values += [v for v in add if v not in values]
    return [v for v in values if v not in remove]


def edit(args: Any, client: Any, out: Any) -> None:
    """PATCH what was given; quota and user caps merge into the current ones."""
    needs_current = (
        args.quota
        or args.user_caps
        or any((args.add_groups, args.remove_groups, args.add_profiles, args.remove_profiles))
    )
    current = client.vc(args.name) if needs_current else {}
    changes = {
        "description": args.description,
        "quota": {**current.get("quota", {}), **args.quota} if args.quota else None,
        "user_caps": {**current.get("user_caps", {}), **args.user_caps} if args.user_caps else None,
        "groups": _edited(current.get("groups", []), args.groups, args.add_groups, args.remove_groups),
        "profiles": _edited(current.get("profiles", []), args.profiles, args.add_profiles, args.remove_profiles),
    }
    if all(value is None for value in changes.values()) and args.storage_quota is None:
        raise UsageError("nothing to change: give --description, --quota, --storage-quota, --group, ... (see --help)")
    if any(value is not None for value in changes.values()):
        vc = client.update_vc(args.name, **changes)
    if args.storage_quota is not None:
        vc = _set_storage_quota(client, args.name, args.storage_quota)
    out.show(vc, vc_details(vc))


def rm(args: Any, client: Any, out: Any) -> None:
    if not args.yes:
        if not sys.stdin or not sys.stdin.isatty():
            raise UsageError(f"deleting VC {args.name} cannot be undone: repeat with --yes")
        if input(f"Delete VC {args.name}? [y/N] ").strip().lower() not in ("y", "yes"):
            out.note("not deleted")
            return
    client.delete_vc(args.name)
    out.show({"deleted": args.name}, f"deleted VC {args.name}")
