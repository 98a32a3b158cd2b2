"""The local backend: each attempt is a process tree on this machine, in its own session.

``submit`` starts ``wrapper`` (``asyncio.create_subprocess_exec``, ``start_new_session``, no
pipes) around ``local_command``'s argv, with ``rankshim`` in front of the user's program so
each rank logs to ``<job>/attempt-<n>/logs/rank-<r>.log``. The ref is
``<pid>:<start ticks>:<attempt dir>``: liveness checks compare /proc start times, so a reused
pid is never mistaken for the job.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from anyio import to_thread

from . import procs, ranklogs
from .backend import Backend, Launch, Polled
from .launch import user_argv
from .local import local_command

SHIM = [sys.executable, "-m", "yitong_services.jobs.rankshim"]
TORCHRUN = (sys.executable, "-m", "torch.distributed.run")


def attempt_dir(workdir: Path, attempt: int) -> Path:
    return workdir / f"attempt-{attempt}"


def parse_ref(ref: str) -> tuple[int, int, Path]:
    pid, started, path = ref.split(":", 2)
    return int(pid), int(started), Path(path)


def read_exit(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / "exit").read_text())
    except (FileNotFoundError, ValueError):
        return None


def read_pid(path: Path) -> tuple[int, int] | None:
    try:
        pid, started = (path / "pid").read_text().split()
        return int(pid), int(started)
    except (FileNotFoundError, ValueError):
        return None


class LocalBackend(Backend):
    name = "local"
    grace = 10.0  # seconds between SIGTERM and SIGKILL on cancel

    async def submit(self, launch: Launch) -> str:
        here = attempt_dir(launch.workdir, launch.attempt)
        (here / "logs").mkdir(parents=True, exist_ok=True)
        (launch.workdir / launch.spec.outputs).mkdir(parents=True, exist_ok=True)
        argv, env = local_command(
            launch.spec, launch.job_id, str(launch.workdir), launch.visible_devices, launch.input_paths,
            torchrun=TORCHRUN,
        )
        user = user_argv(launch.spec)
        argv = argv[: len(argv) - len(user)] + [*SHIM, str(here / "logs"), "--", *user]
        limit = str(launch.spec.max_run_time or 0)
        full_env = job_base_env(os.environ)
        full_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full_env.get('PATH', '')}"
        full_env.update(env)
        full_env.update(launch.env)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "yitong_services.jobs.wrapper", str(here), limit, "--", *argv,
            cwd=str(launch.cwd), env=full_env, start_new_session=True,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )
        # reap the wrapper when it ends (the exit file is the record; this only avoids zombies)
        asyncio.get_running_loop().create_task(proc.wait())
        started = await to_thread.run_sync(procs.start_time, proc.pid)
        return f"{proc.pid}:{started or 0}:{here}"

    async def adopt(self, job_id: int, attempt: int) -> str | None:
        here = attempt_dir(self.data_dir / "jobs" / str(job_id), attempt)

        def find() -> str | None:
            found = read_pid(here)
            if found is None:
                pid = procs.find_by_argv(str(here))
                started = procs.start_time(pid) if pid else None
                found = (pid, started) if pid and started else None
            if found is None:
                return f"0:0:{here}" if read_exit(here) else None
            return f"{found[0]}:{found[1]}:{here}"

        return await to_thread.run_sync(find)

    async def poll(self, ref: str) -> Polled:
        pid, started, here = parse_ref(ref)

        def look() -> Polled:
            done = read_exit(here)
            if done is not None:
                rc = done.get("exit_code")
                return Polled("succeeded" if rc == 0 else "failed", rc, done.get("reason", ""), done.get("end"))
            if pid and procs.alive(pid, started):
                return Polled("running")
            done = read_exit(here)  # it may have ended between the two looks
            if done is not None:
                rc = done.get("exit_code")
                return Polled("succeeded" if rc == 0 else "failed", rc, done.get("reason", ""), done.get("end"))
            return Polled("vanished", None, f"process {pid} vanished without an exit record")

        return await to_thread.run_sync(look)

    async def cancel(self, ref: str) -> None:
        pid, started, _here = parse_ref(ref)
        if not pid or not procs.alive(pid, started):
            return
        _signal_group(pid, signal.SIGTERM)
        asyncio.get_running_loop().call_later(self.grace, self._kill_if_alive, pid, started)

    def _kill_if_alive(self, pid: int, started: int) -> None:
        if procs.alive(pid, started):
            _signal_group(pid, signal.SIGKILL)

    async def read_log(self, ref: str, rank: int, offset: int = 0) -> bytes:
        return await to_thread.run_sync(ranklogs.read, parse_ref(ref)[2], rank, offset)

    async def ranks(self, ref: str) -> list[int]:
        return await to_thread.run_sync(ranklogs.ranks, parse_ref(ref)[2])

    def describe(self, ref: str) -> dict[str, Any]:
        pid, _started, here = parse_ref(ref)
        return {
            "hosts": [socket.gethostname()],
            "access": f"local processes on {socket.gethostname()}, process group {pid}; files under {here.parent}",
        }


#: the service's own credentials and settings never reach a job's processes
PRIVATE_PREFIXES = ("JUPYTERHUB_", "YITONG_", "JPY_", "CONFIGPROXY_", "AWS_SECRET", "PGPASSWORD")


def job_base_env(environ) -> dict[str, str]:  # noqa: ANN001
    """The service's environment without its secrets (hub API token, database URL, OAuth
    client secrets): the base a local job's environment is built on."""
    return {k: v for k, v in environ.items() if not k.startswith(PRIVATE_PREFIXES)}


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
