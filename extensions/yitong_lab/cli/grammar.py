"""One argparse grammar for ``yt`` (console script) and ``%yt`` (line magic).

Nouns plug in through :data:`COMMANDS`: each module named there has
``register(nouns, common)`` that adds its subparser(s) to ``nouns`` (passing
``parents=[common]`` to leaf commands for ``--json``) and sets ``func`` on each leaf:
``func(args, client, out)`` where ``out`` is an :class:`~yitong_lab.cli.output.Output`; a
``func`` that returns an int sets the exit code (``yt ssh`` passes ssh's on).
A new noun (``data``, ``job``, ``run``) is one new module plus one line here.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

PROG = "yt"

#: noun -> module; order is the order of ``yt --help``
COMMANDS: dict[str, str] = {
    "whoami": "yitong_lab.cli.whoami",
    "vc": "yitong_lab.cli.vc",
    "profile": "yitong_lab.cli.profile",
    "data": "yitong_lab.cli.data",
    "job": "yitong_lab.cli.job",
    "run": "yitong_lab.cli.run",
    "ssh": "yitong_lab.cli.ssh",
    "hpo": "yitong_lab.cli.hpo",
    "model": "yitong_lab.cli.model",
    "deploy": "yitong_lab.cli.deploy",
    "alert": "yitong_lab.cli.alert",
}


#: verbs people type from other tools' CLIs (kubectl, docker, git): each alias reaches the verb
#: where a noun has the verb and not the alias; aliases stay out of ``--help``
ALIASES: dict[str, tuple[str, ...]] = {
    "ls": ("list",),
    "rm": ("delete", "remove", "del"),
    "remove": ("rm", "delete", "del"),
    "show": ("get", "describe", "info"),
    "logs": ("log",),
    "cancel": ("stop", "kill"),
}


def add_aliases(subparsers: argparse._SubParsersAction) -> None:
    """Give each noun's verbs the :data:`ALIASES` it lacks, and the nested verbs too."""
    for parser in list(subparsers.choices.values()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                verbs = action.choices
                for verb, aliases in ALIASES.items():
                    if verb in verbs:
                        for alias in aliases:
                            verbs.setdefault(alias, verbs[verb])  # type: ignore[attr-defined]
                add_aliases(action)


class ParserExit(Exception):
    """argparse wanted to exit (``--help``, a usage error); ``status`` is the exit code."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


class UsageError(Exception):
    """A command refused its input before calling the API (exit code 2)."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of calling ``sys.exit`` (safe in a kernel)."""

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            self._print_message(message, sys.stderr)
        raise ParserExit(status)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(prog: str = PROG) -> Parser:
    parser = Parser(
        prog=prog,
        description="Yitong: your virtual clusters (VCs), quotas, profiles, datasets, jobs and models.",
        epilog="Configured by YITONG_API_URL and JUPYTERHUB_API_TOKEN (or YT_API_URL, YT_TOKEN).",
    )
    common = Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    nouns = parser.add_subparsers(dest="noun", metavar="COMMAND", required=True)
    for module in COMMANDS.values():
        importlib.import_module(module).register(nouns, common)
    add_aliases(nouns)
    return parser


def run(argv: list[str], client: Any = None, progress: Any = "auto", cell: str | None = None) -> int:
    """Parse ``argv``, run the command, print to ``sys.stdout``/``sys.stderr``; return the exit code.

    Service refusals print ``yt: <the service's sentence>`` on stderr and return 1. ``progress``:
    how transfers show progress (``"auto"``: tqdm on a terminal; ``"widget"`` in a notebook).
    ``cell``: the body of a ``%%yt`` cell (only ``job submit`` takes one).
    """
    rest: list[str] = []
    if "--" in argv:  # everything after -- is a command for the remote side (yt ssh TARGET -- CMD)
        at = argv.index("--")
        argv, rest = argv[:at], argv[at + 1 :]
    try:
        args = build_parser().parse_args(argv)
    except ParserExit as stop:
        return stop.status
    if rest and not getattr(args, "takes_rest", None):
        print(f"{PROG}: this command takes nothing after --", file=sys.stderr)
        return 2
    args.rest = rest
    if cell is not None and (args.noun, getattr(args, "verb", None)) not in (("job", "submit"), ("hpo", "create")):
        print(
            f"{PROG}: %%yt takes a cell only for `job submit` and `hpo create`; use %yt for the other commands",
            file=sys.stderr,
        )
        return 2
    args.cell = cell
    from yitong_lab.cli.output import Output
    from yitong_lab.client import Client, YitongError

    own = client is None
    if own:
        client = Client()
    try:
        status = args.func(args, client, Output(json=getattr(args, "json", False), progress=progress))
    except YitongError as error:
        print(f"{PROG}: {error.detail}", file=sys.stderr)
        return 1
    except UsageError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    finally:
        if own:
            client.close()
    return status if isinstance(status, int) else 0
