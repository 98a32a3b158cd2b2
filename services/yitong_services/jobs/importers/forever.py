"""Commands that never end by themselves: a job that waits for them never finishes.

OpenPAI jobs sometimes keep a role alive on purpose (``sleep infinity`` so people can SSH in, a
notebook server, a parameter server) and let another role's ``completion`` end the job. A Yitong
job ends when every node's commands have ended, so such a role keeps it running until
``max_run_time`` or a cancel: the importers say so in a note.
"""

from __future__ import annotations

import re

FOREVER = [
    (re.compile(r"\bsleep\s+(infinity|inf)\b"), "sleep infinity"),
    (re.compile(r"\btail\s+(-\w*f\w*|--follow)\b"), "tail -f"),
    (re.compile(r"\bwhile\s+(true|:|\[\s*1\s*\])\s*;?\s*do\b"), "an endless while loop"),
    (re.compile(r"\bjupyter(-|\s+)(notebook|lab|server)\b"), "a notebook server"),
    (re.compile(r"(^|[\s;&|/])(tensorboard|sshd\s+-D|nginx\s+-g\s+['\"]?daemon off)\b"), "a server"),
    (re.compile(r"\bpython\S*\s+-m\s+http\.server\b"), "a web server"),
]


def never_ends(text: str) -> str | None:
    """What in ``text`` runs forever (``"sleep infinity"``), or None."""
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if code.rstrip().endswith("&"):
            continue  # started in the background: the commands after it decide
        for pattern, what in FOREVER:
            if pattern.search(code):
                return what
    return None
