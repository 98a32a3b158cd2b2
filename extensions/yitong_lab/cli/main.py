"""The ``yt`` console script."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from yitong_lab.cli.grammar import run

    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":  # python -m yitong_lab.cli.main
    sys.exit(main())
