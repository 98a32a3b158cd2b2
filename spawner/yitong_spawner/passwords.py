"""`yitong-passwd`: add people to a Yitong hub, or set their passwords.

`yitong-passwd add NAME [--generate] [--vc VC] [--group G]` (the hub user, the password and the
groups: :mod:`yitong_spawner.people`) and `yitong-passwd set NAME [--generate] [--file PATH]` (the
password only); the same as `python -m yitong_spawner.passwords`. The CLI finds the data directory
of the running platform (:mod:`yitong_spawner.running`). The file and its format:
:mod:`yitong_spawner.password_store`, whose names are importable from here too.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from . import running
from .password_store import (
    ALGORITHM,
    ITERATIONS,
    atomic_json,
    default_data_dir,
    ensure_admin,
    generate_password,
    hash_password,
    load,
    password_file,
    save,
    set_password,
    verify_password,
)

__all__ = [
    "ALGORITHM",
    "ITERATIONS",
    "atomic_json",
    "default_data_dir",
    "ensure_admin",
    "generate_password",
    "hash_password",
    "load",
    "main",
    "password_file",
    "save",
    "set_password",
    "verify_password",
]


def read_password(name: str, generate: bool) -> str | None:
    """The new password: generated, one line of stdin, or typed twice; None when it will not do."""
    if generate:
        password = generate_password()
    elif not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"New password for {name}: ")
        if password != getpass.getpass("Again: "):
            print("Passwords differ; nothing changed.", file=sys.stderr)
            return None
    if len(password) < 8:
        print("A password needs at least 8 characters; nothing changed.", file=sys.stderr)
        return None
    return password


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="yitong-passwd",
        description="Add people to a Yitong hub, or set their passwords. The data directory is "
        "$YITONG_DATA_DIR, else that of the hub running from this checkout, else the checkout's .yitong.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser(
        "add",
        help="add a person: the hub user, the password and the groups (VC membership) in one step",
        description="Make NAME a hub user with a password and the groups given. With the hub running, at once "
        "(through its REST API); with it stopped, at its next start.",
    )
    add.add_argument("name")
    add.add_argument("--generate", action="store_true", help="generate a random password and print it once")
    add.add_argument("--vc", action="append", default=[], help="a VC NAME joins (its first group); repeatable")
    add.add_argument("--group", action="append", default=[], help="a hub group NAME joins; repeatable")
    cmd = sub.add_parser("set", help="set (or reset) NAME's password")
    cmd.add_argument("name")
    cmd.add_argument("--generate", action="store_true", help="generate a random password and print it once")
    cmd.add_argument(
        "--file",
        help="password file (default: <data dir>/secrets/passwords.json; the data dir is $YITONG_DATA_DIR, "
        "else that of the hub running from this checkout, else the checkout's .yitong, as for `make run`)",
    )
    args = parser.parse_args(argv)
    if args.command == "add" or not args.file:
        try:
            data_dir, hub = running.find()
        except running.Ambiguous as e:
            print(f"yitong-passwd: {e}; nothing changed.", file=sys.stderr)
            return 2
    if args.command == "add":
        return _add(args, data_dir, hub)
    path = args.file or password_file(data_dir)
    password = read_password(args.name, args.generate)
    if password is None:
        return 1
    set_password(path, args.name, password)
    if args.generate:
        print(f"Password for {args.name}: {password}")
        print(f"(stored hashed in {path})", file=sys.stderr)
    else:
        print(f"Password for {args.name} set in {path}")
    return 0


def _add(args: argparse.Namespace, data_dir: str, hub: running.Hub | None) -> int:
    from . import people
    from .hubconfig import load_settings

    settings_path = hub.settings if hub and hub.settings else os.environ.get("YITONG_SETTINGS") or ""
    if not settings_path and (checkout := running.checkout_of()):
        settings_path = os.path.join(checkout, "yitong.example.yaml")
    try:
        settings = load_settings(settings_path) if settings_path else {}
        kind = (settings.get("auth") or {}).get("kind", "password")
        if kind != "password":
            raise people.Refused(
                f"logins come from an identity provider here (auth.kind: {kind} in {settings_path}): "
                "people and their groups are the provider's"
            )
        name = people.normalize_name(args.name)
        token = people.service_token(data_dir) if hub else None
        if hub and not token:
            raise people.Refused(f"{data_dir}/secrets/service-token cannot be read: run this as the hub's account")
        service_port = int((settings.get("service") or {}).get("port", 8010))
        groups = list(dict.fromkeys(args.group))
        for vc in args.vc:
            first = people.vc_groups(settings, vc, hub, token, service_port)[0]
            groups += [first] if first not in groups else []
        password = read_password(name, args.generate)
        if password is None:
            return 1
        set_password(password_file(data_dir), name, password)
        if hub and token:
            api = people.HubAPI(people.hub_api_url(settings), token)
            try:
                made = api.ensure_user(name)
                for group in groups:
                    api.add_to_group(group, name)
            finally:
                api.close()
            state = "is now a hub user" if made else "was already a hub user"
        else:
            people.record_pending(data_dir, name, groups)
            state = "becomes a hub user at the hub's next start (it is not running)"
    except (people.Refused, ValueError) as e:
        print(f"yitong-passwd: {e}; nothing changed.", file=sys.stderr)
        return 2
    if args.generate:
        print(f"Password for {name}: {password}")
    in_groups = f", in group{'s' if len(groups) > 1 else ''} {', '.join(groups)}" if groups else ", in no group"
    vcs = f" (VC {', '.join(args.vc)})" if args.vc else ""
    print(f"{name} {state}{in_groups}{vcs}; data directory {data_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
