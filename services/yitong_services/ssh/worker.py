"""What a shell in a job's worker is: the worker's process, directory and environment minus
secrets (blocking reads of /proc, local backend), and the argv of the shell (pure builders)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
#: environment names that hold credentials: never in an SSH shell (the job's own token included)
SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|API_KEY|ACCESS_KEY", re.IGNORECASE)


@dataclass(frozen=True)
class Worker:
    pid: int
    uid: int
    gid: int
    cwd: str
    env: dict[str, str]


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """The environment without any variable whose name says it holds a credential."""
    return {k: v for k, v in env.items() if not SECRET.search(k)}


def shell_argv(command: str | None, pty: bool, shell: str = SHELL) -> list[str]:
    """``bash -c CMD`` for ``ssh host CMD``, an interactive shell with a terminal, else a shell reading stdin."""
    if command is not None:
        return [shell, "-c", command]
    return [shell, "-i"] if pty else [shell]


def slurm_argv(slurm_id: str, command: str | None, pty: bool, shell: str = SHELL) -> list[str]:
    """A step in a running Slurm job's allocation, beside its own steps (``--overlap``)."""
    if not re.fullmatch(r"[0-9]+(_[0-9]+)?", slurm_id):
        raise ValueError(f"{slurm_id!r} is not a Slurm job id")
    head = ["srun", f"--jobid={slurm_id}", "--overlap", "--nodes=1", "--ntasks=1"]
    if pty and command is None:
        head.append("--pty")
    return [*head, *shell_argv(command, pty and command is None, shell)]


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in (PROC / str(pid) / "task").iterdir():
            try:
                out.extend(int(c) for c in (task / "children").read_text().split())
            except (FileNotFoundError, ProcessLookupError):
                continue
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return out


def read_environ(pid: int) -> dict[str, str]:
    raw = (PROC / str(pid) / "environ").read_bytes()
    env = {}
    for item in raw.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq and name:
            env[name.decode(errors="replace")] = value.decode(errors="replace")
    return env


def _ids(pid: int) -> tuple[int, int]:
    uid = gid = -1
    for line in (PROC / str(pid) / "status").read_text().splitlines():
        if line.startswith("Uid:"):
            uid = int(line.split()[1])
        elif line.startswith("Gid:"):
            gid = int(line.split()[1])
    return uid, gid


def find_worker(wrapper_pid: int, rank: int) -> Worker | None:
    """The process of ``rank`` under a local job's wrapper: the first descendant (breadth first)
    whose ``RANK`` is ``rank``; without any ``RANK`` (not a distributed job) rank 0 is the
    wrapper's first child. Blocking."""
    seen: list[int] = []
    todo = _children(wrapper_pid)
    while todo and len(seen) < 10_000:
        pid = todo.pop(0)
        seen.append(pid)
        todo.extend(_children(pid))
    fallback = None
    for pid in seen:
        try:
            env = read_environ(pid)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if env.get("RANK") == str(rank):
            return _worker(pid, env)
        if fallback is None and rank == 0 and "RANK" not in env:
            fallback = (pid, env)
    return _worker(*fallback) if fallback else None


def _worker(pid: int, env: dict[str, str]) -> Worker | None:
    try:
        uid, gid = _ids(pid)
        cwd = os.readlink(PROC / str(pid) / "cwd")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return Worker(pid, uid, gid, cwd, without_secrets(env))
