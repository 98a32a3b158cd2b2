"""``yt profile ls``: the profiles of the caller's VCs (admin: all)."""

from __future__ import annotations

from typing import Any

from yitong_lab.cli.output import profiles_table


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("profile", help="server profiles (image, cpu, memory, accelerator)")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    verbs.add_parser("ls", parents=[common], help="list the profiles you can start").set_defaults(func=ls)


def ls(args: Any, client: Any, out: Any) -> None:
    profiles = client.profiles()
    out.show(profiles, profiles_table(profiles) if profiles else "no profiles")
