"""A fork server for the local backend: one small, warm process that starts each attempt's
wrapper by forking itself, instead of a new interpreter per attempt.

A job wrapper started as ``python -I -S`` costs an interpreter's start (15-25 ms, more on a busy
machine) before the job's own program starts; a no-op trial of an experiment is not much longer.
The service starts this process once (``python -I -S -c BOOT <services root>``, the environment
without the service's secrets, a socket pair as stdin); it imports the wrapper's modules and then
serves requests, one JSON line each::

    {"argv": [wrapper args...], "env": {...}, "cwd": "...", "uid": 1001 | null, "gid": 1001 | null}

For each it forks; the child starts a new session, drops to ``uid``/``gid`` (no supplementary
groups), enters ``cwd`` and runs ``wrapper.main(argv, env)``, which is what ``python -I -S -c
wrapper.LAUNCH`` would have run with ``env`` as its environment: the job's program gets ``env``
as its whole environment. The answer is one JSON line,
``{"pid": N}`` or ``{"error": sentence}``.

The children are not the service's: their ends are seen on a pidfd, the exit record is the
wrapper's as before, and this process reaps them (SIGCHLD ignored: the kernel reaps). They
outlive it: it exits when the service closes its socket, and a restarted service adopts the
running attempts as before.

Secrets: a request carries the attempt's environment (its tokens), and a forked child holds a
copy of this process's memory, so earlier requests' may linger in it. The child never runs job
code: the wrapper execs the job's program, which starts with a fresh address space. This
process says it is not dumpable (``PR_SET_DUMPABLE`` 0) when it starts, and a forked child
inherits that (the kernel copies the flag on fork and resets it on exec, so the job's program is
an ordinary process): a job of the same account can neither ptrace this process or a wrapper nor
read their memory. In multi-user mode the child changes its uid, on which the kernel resets the
flag to ``fs.suid_dumpable``; the child then says so again, whatever that setting is.
"""

from __future__ import annotations

import json
import os
import signal
import sys

TYPE_CHECKING = False  # typing is not imported: this process, and so each child, stays small
if TYPE_CHECKING:
    from typing import Any

BOOT = (
    "import sys; sys.path.append(sys.argv.pop(1)); from yitong_services.jobs.launcher import serve; sys.exit(serve())"
)
PR_SET_DUMPABLE = 4


def _prctl() -> Any:
    """libc's ``prctl``, or None where it cannot be had. Looked up once, in the server: importing
    ctypes in each forked child cost it about 4 ms of CPU, as much as the rest of its start."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL: Any = None  # set by serve()


def _undumpable() -> None:
    if _PRCTL is not None:
        _PRCTL(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _child(request: dict, conn_fd: int) -> None:
    """In the forked child: become the attempt's wrapper; never returns."""
    import gc

    from . import wrapper

    gc.disable()  # the wrapper makes no garbage worth a collection that would copy shared pages
    code = 1
    try:
        os.close(conn_fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the wrapper waits on its own child
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        if request.get("uid") is not None:
            os.setgroups([])
            os.setgid(int(request["gid"]))
            os.setuid(int(request["uid"]))
            _undumpable()  # inherited from the server, but a uid change resets it
        os.chdir(request["cwd"])
        # the job's whole environment, handed to its program; not set in this process first
        # (os.environ's clear and update cost half a millisecond of each start)
        code = wrapper.main(list(request["argv"]), request["env"])
    except BaseException:
        code = 126
    finally:
        os._exit(code)


def _prepare() -> None:
    """The server's own start: what each forked child inherits ready-made."""
    import gc

    from . import wrapper  # noqa: F401 -- imported once here, so a child starts warm

    global _PRCTL
    _PRCTL = _prctl()
    _undumpable()  # this process holds every request's tokens; its children inherit the flag

    # what is loaded now stays out of the collector's reach: a child's collections would write to
    # (and so copy) every page of it; a child is short-lived and collects nothing (see _child)
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the wrappers


def serve() -> int:
    """Serve requests on stdin (a socket) until the service closes it."""
    _prepare()
    conn_fd = sys.stdin.fileno()
    reader = os.fdopen(os.dup(conn_fd), "rb", buffering=1 << 16)
    while True:
        line = reader.readline(1 << 22)
        if not line:
            return 0
        answer: dict[str, object]
        try:
            request = json.loads(line)
            pid = os.fork()
        except (ValueError, OSError) as e:
            answer = {"error": f"cannot start the wrapper: {e}"}
        else:
            if pid == 0:
                reader.close()
                _child(request, conn_fd)
            answer = {"pid": pid}
        os.write(conn_fd, json.dumps(answer).encode() + b"\n")
