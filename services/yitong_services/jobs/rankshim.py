"""``python -m yitong_services.jobs.rankshim LOG_DIR -- ARGV...``: one process's log per rank.

Runs between the launcher (torchrun) and the user's program: stdout and stderr go to
``LOG_DIR/rank-$RANK.log`` (rank 0 when the launcher sets no RANK), then ARGV replaces it.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> None:
    log_dir, sep, *command = argv
    assert sep == "--" and command
    rank = os.environ.get("RANK", "0")
    fd = os.open(os.path.join(log_dir, f"rank-{int(rank)}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"yitong: cannot run {command[0]!r}: {e}", file=sys.stderr)
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
