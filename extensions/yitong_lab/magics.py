"""The ``%yt`` line magic: the ``yt`` grammar inside a kernel.

``%yt vc ls`` prints exactly what ``yt vc ls`` prints; refusals print the service's
sentence (no traceback). Only stdlib is imported here; the SDK imports httpx on first use.
"""

from __future__ import annotations

import shlex


def yt(line: str) -> None:
    """Run one ``yt`` command line, e.g. ``%yt vc ls`` or ``%yt vc show vision --json``."""
    from yitong_lab.cli.grammar import run

    try:
        argv = shlex.split(line)
    except ValueError as error:
        import sys

        print(f"yt: {error}", file=sys.stderr)
        return
    run(argv)


def register(ipython) -> None:  # noqa: ANN001
    ipython.register_magic_function(yt, magic_kind="line", magic_name="yt")
