"""The ``yt`` console script."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from yitong_lab.cli.grammar import run

    # httpx imports its own command line (click, rich, pygments: 50 ms, a third of httpx's
    # import) unless it finds it absent; this process never runs it
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":  # python -m yitong_lab.cli.main
    sys.exit(main())
