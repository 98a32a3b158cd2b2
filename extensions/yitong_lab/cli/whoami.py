"""``yt whoami``: who the API sees (name, admin flag, groups, VCs)."""

from __future__ import annotations

from typing import Any

from yitong_lab.cli.output import fields, names


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("whoami", parents=[common], help="who the platform API sees")
    parser.set_defaults(func=whoami)


def whoami(args: Any, client: Any, out: Any) -> None:
    me = client.me()
    out.show(
        me,
        fields(
            [
                ("name", me["name"]),
                ("admin", "yes" if me.get("admin") else "no"),
                ("groups", names(me.get("groups"))),
                ("vcs", names(me.get("vcs"))),
            ]
        ),
    )
