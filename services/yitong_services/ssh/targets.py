"""Login names: who logs in and what they reach (pure).

``alice`` is alice's default notebook server, ``alice+server.gpu`` her server named ``gpu``,
``alice+job.12`` worker (rank) 0 of her job 12 and ``alice+job.12.3`` its rank 3. A hub name
that itself contains ``+`` still works: only a suffix matching one of these forms is a target.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..core.limits import MAX_ID

_SERVER = re.compile(r"^server\.([A-Za-z0-9][A-Za-z0-9._-]{0,254})$")
_JOB = re.compile(r"^job\.([1-9][0-9]{0,18})(?:\.([0-9]{1,6}))?$")
MAX_LOGIN = 512


@dataclass(frozen=True)
class Target:
    person: str
    kind: Literal["server", "job"]
    server: str = ""  # the notebook server's name ("" = the default server)
    job_id: int = 0
    rank: int = 0

    def describe(self) -> str:
        if self.kind == "job":
            return f"worker {self.rank} of job {self.job_id}"
        return f"server {self.server!r}" if self.server else "the default server"


def parse_login(login: str) -> Target | None:
    """The target a login name names (None for a name no hub user can have: empty, too long)."""
    if not login or len(login) > MAX_LOGIN or any(ord(c) < 0x20 for c in login):
        return None
    person, plus, suffix = login.rpartition("+")
    if plus and person:
        server = _SERVER.match(suffix)
        if server:
            return Target(person, "server", server=server.group(1))
        job = _JOB.match(suffix)
        if job and int(job.group(1)) <= MAX_ID:
            return Target(person, "job", job_id=int(job.group(1)), rank=int(job.group(2) or 0))
    return Target(login, "server")


def login_for(person: str, server: str = "", job_id: int | None = None, rank: int = 0) -> str:
    """The login name of a target (the inverse of :func:`parse_login`)."""
    if job_id is not None:
        return f"{person}+job.{job_id}" + (f".{rank}" if rank else "")
    return f"{person}+server.{server}" if server else person
