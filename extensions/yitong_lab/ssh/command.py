"""The ``ssh`` command line for a target (pure): ``yt ssh [TARGET] [-- COMMAND...]``.

TARGET: nothing for your default notebook server, ``NAME`` (or ``server:NAME``) for a named
server, ``JOB`` or ``JOB:RANK`` (digits) for a running job's worker.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_JOB = re.compile(r"^([1-9][0-9]*)(?::([0-9]+))?$")


def login_name(person: str, target: str) -> str:
    """The gateway's login name for ``target`` (same grammar as the service's ``ssh.targets``)."""
    if not target:
        return person
    if target.startswith("server:"):
        name = target[len("server:") :]
        return f"{person}+server.{name}" if name else person
    job = _JOB.match(target)
    if job:
        return f"{person}+job.{job.group(1)}" + (f".{job.group(2)}" if job.group(2) and job.group(2) != "0" else "")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}", target):
        raise ValueError(f"{target!r} is neither a server name nor JOB[:RANK]")
    return f"{person}+server.{target}"


def ssh_argv(
    login: str,
    host: str,
    port: int,
    known_hosts: str,
    command: Sequence[str] = (),
    identity: str | None = None,
    ssh: str = "ssh",
) -> list[str]:
    """``ssh -p PORT -o UserKnownHostsFile=... -o StrictHostKeyChecking=yes LOGIN@HOST [COMMAND]``."""
    argv = [ssh, "-p", str(port), "-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes"]
    if identity:
        argv += ["-i", identity, "-o", "IdentitiesOnly=yes"]
    return [*argv, f"{login}@{host}", *command]


def known_hosts_line(host: str, port: int, host_key: str) -> str:
    """The known_hosts entry of the gateway (``[host]:port key``, the default port bare)."""
    where = host if port == 22 else f"[{host}]:{port}"
    return f"{where} {host_key}\n"
