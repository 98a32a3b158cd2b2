"""What a shell in a job's worker is: the worker's process, directory, environment minus
secrets and namespaces (blocking reads of /proc, local backend), and the argv of the shell (pure
builders). A job in a PID namespace of its own (core/pidns.py) gets its shells in it: they see the
job's processes (``ps``, ``py-spy``), no one else's, and end with the job."""

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


def namespaces_of(worker: Worker) -> tuple[int, int] | None:
    """Descriptors of the PID and mount namespaces of ``worker`` when they are not this
    process's (the job runs in its own), opened, then checked to still belong to a process of the
    worker's account; None when the job shares this process's. Blocking."""
    base = PROC / str(worker.pid) / "ns"
    if os.stat(base / "pid").st_ino == os.stat("/proc/self/ns/pid").st_ino:
        return None
    pid_ns = os.open(base / "pid", os.O_RDONLY | os.O_CLOEXEC)
    try:
        mnt_ns = os.open(base / "mnt", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        os.close(pid_ns)
        raise
    if _ids(worker.pid)[0] != worker.uid:  # the pid was reused meanwhile: not the worker's
        os.close(pid_ns)
        os.close(mnt_ns)
        raise ProcessLookupError(f"process {worker.pid} ended")
    return pid_ns, mnt_ns


def _ids(pid: int) -> tuple[int, int]:
    uid = gid = -1
    for line in (PROC / str(pid) / "status").read_text().splitlines():
        if line.startswith("Uid:"):
            uid = int(line.split()[1])
        elif line.startswith("Gid:"):
            gid = int(line.split()[1])
    return uid, gid


def namespace_init(pid: int) -> bool:
    """``pid`` is PID 1 of a PID namespace below this one (a job's wrapper in its own namespace,
    core/pidns.py): its ``NSpid`` ends in 1."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("NSpid:"):
                ids = line.split()[1:]
                return len(ids) > 1 and ids[-1] == "1"
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return False


def find_worker(wrapper_pid: int, rank: int) -> Worker | None:
    """The process of ``rank`` under a local job's wrapper: the first descendant (breadth first)
    whose ``RANK`` is ``rank``; without any ``RANK`` (not a distributed job) rank 0 is the
    wrapper's first child. A namespace's PID 1 (the wrapper under its anchor) is passed
    through, never taken. Blocking."""
    seen: list[int] = []
    todo = _children(wrapper_pid)
    while todo and len(seen) < 10_000:
        pid = todo.pop(0)
        todo.extend(_children(pid))
        if not namespace_init(pid):
            seen.append(pid)
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
