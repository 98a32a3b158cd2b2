"""Run a process on this machine for one SSH channel: in a new pseudo-terminal when the client
asked for one, else on pipes (stdout and stderr apart). Its exit status is the channel's."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import struct
import subprocess
import termios
from collections.abc import Callable
from functools import partial
from typing import Any

import asyncssh

from ..core import cgroups, pidns

CHUNK = 65536


class StartRefused(Exception):
    """The shell could not start as the account (a sentence for the person)."""


def _child_setup(pty: bool, uid: int | None, gid: int | None, cwd: str | None, cgroup: list[str] | None = None) -> None:
    """In the child before exec: its own session (the terminal becomes its controlling tty),
    the job attempt's ``cgroup`` (still root: only root moves a process into it; the shell and
    all it starts are then held to the job's limits and killed with it; a cgroup that is gone
    fails the start), then the owner's account (no supplementary groups) when the gateway runs
    as root, and only then ``cwd``: entered with the account's rights, never root's (a folder
    the account cannot enter fails the start). ``cwd`` None: the command does the account and
    the folder itself (``pidns.join_argv``)."""
    os.setsid()
    if pty:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    if cgroup:
        cgroups.enter(cgroup)
    if cwd is None:
        return
    if uid is not None and gid is not None and uid != os.geteuid():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    os.chdir(cwd)


def set_size(fd: int, width: int, height: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height or 24, width or 80, 0, 0))


async def _stdin_loop(
    process: asyncssh.SSHServerProcess,
    write: Callable[[bytes], Any],
    eof: Callable[[], Any],
    resize: Callable[[int, int], None],
) -> None:
    while True:
        try:
            data = await process.stdin.read(CHUNK)
        except asyncssh.TerminalSizeChanged as e:
            resize(e.width, e.height)
            continue
        except (asyncssh.BreakReceived, asyncssh.SignalReceived):
            continue
        except (asyncssh.Error, OSError, BrokenPipeError):
            break
        if not data:
            break
        await write(data) if asyncio.iscoroutinefunction(write) else write(data)
    with contextlib.suppress(Exception):
        await eof() if asyncio.iscoroutinefunction(eof) else eof()


async def run(
    process: asyncssh.SSHServerProcess,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    uid: int | None = None,
    gid: int | None = None,
    namespaces: tuple[int, int] | None = None,
    cgroup: list[str] | None = None,
) -> int:
    """Run ``argv`` for ``process`` in ``cwd`` (entered as the account) and return its exit status
    (128 + signal when killed). ``namespaces``: descriptors of the PID and mount namespaces of
    the job's worker, which the shell joins (core/pidns.py; closed here once it has started).
    ``cgroup``: the job attempt's cgroup directories (core/cgroups.py), which the shell enters."""
    pty = process.get_terminal_type() is not None
    fds: tuple[int, ...] = ()
    if namespaces is not None:
        argv = pidns.join_argv(*namespaces, uid, gid, cwd, argv)
        setup, fds = partial(_child_setup, pty, None, None, None, cgroup), namespaces
    else:
        setup = partial(_child_setup, pty, uid, gid, cwd, cgroup)
    try:
        if pty:
            return await _run_pty(process, argv, env, setup, fds)
        return await _run_pipes(process, argv, env, setup, fds)
    except subprocess.SubprocessError:  # the preexec failed: the cgroup, the account or the folder
        where = " in the job's cgroup" if cgroup else ""
        raise StartRefused(f"the shell cannot start in {cwd} as the job's account{where}") from None
    finally:
        for fd in fds:
            os.close(fd)


def _status(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


async def _run_pipes(process, argv, env, setup, fds) -> int:  # type: ignore[no-untyped-def]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=setup,
        pass_fds=fds,
    )
    assert proc.stdin and proc.stdout and proc.stderr

    async def write(data: bytes) -> None:
        proc.stdin.write(data)  # type: ignore[union-attr]
        await proc.stdin.drain()  # type: ignore[union-attr]

    async def out(reader: asyncio.StreamReader, writer: Any) -> None:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()

    stdin = asyncio.create_task(_stdin_loop(process, write, proc.stdin.close, lambda w, h: None))
    try:
        await asyncio.gather(out(proc.stdout, process.stdout), out(proc.stderr, process.stderr))
        return _status(await proc.wait())
    finally:
        stdin.cancel()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            await proc.wait()


async def _run_pty(process, argv, env, setup, fds) -> int:  # type: ignore[no-untyped-def]
    master, slave = os.openpty()
    width, height, _pw, _ph = process.get_terminal_size()
    set_size(master, width, height)
    env = {**env, "TERM": process.get_terminal_type() or "xterm"}
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=setup,
            pass_fds=fds,
        )
    finally:
        os.close(slave)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    os.set_blocking(master, False)

    def readable() -> None:
        try:
            data = os.read(master, CHUNK)
        except BlockingIOError:
            return
        except OSError:  # EIO: every process holding the terminal has ended
            data = b""
        if not data:
            loop.remove_reader(master)
            if not done.done():
                done.set_result(None)
            return
        process.stdout.write(data)

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(master, view) :]
            except BlockingIOError:
                break  # the terminal's input queue is full: drop the rest, as a real terminal would

    loop.add_reader(master, readable)
    stdin = asyncio.create_task(_stdin_loop(process, write, lambda: write(b"\x04"), partial(set_size, master)))
    try:
        await done
        return _status(await proc.wait())
    finally:
        stdin.cancel()
        loop.remove_reader(master)
        os.close(master)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            await proc.wait()
