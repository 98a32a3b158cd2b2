"""A fork server for the local backend: one small, warm process that starts each attempt's
wrapper by forking itself, instead of a new interpreter per attempt.

A job wrapper started as ``python -I -S`` costs an interpreter's start (15-25 ms, more on a busy
machine) before the job's own program starts; a no-op trial of an experiment is not much longer.
The service starts this process once (``python -I -S -c BOOT <services root>``, the environment
without the service's secrets, a socket pair as stdin); it imports the wrapper's modules and then
serves requests, one JSON line each::

    {"argv": [wrapper args...], "env": {...}, "cwd": "...", "uid": 1001 | null, "gid": 1001 | null,
     "pid_namespace": true | false, "cgroup": {dir: {file: value}} | null}

For each it forks; the child starts a new session, drops to ``uid``/``gid`` (no supplementary
groups), enters ``cwd`` and runs ``wrapper.main(argv, env)``, which is what ``python -I -S -c
wrapper.LAUNCH`` would have run with ``env`` as its environment: the job's program gets ``env``
as its whole environment. The answer is one JSON line,
``{"pid": N}`` or ``{"error": sentence}``.

With ``pid_namespace`` (multi-user mode, ``backends.local.pid_namespaces``) the child first
splits in two (core/pidns.py): the forked child, pid N, stays in the host's namespace as the
attempt's *anchor* (what the service watches, signals and reads in the pid file, which the
wrapper writes with the anchor's pid and start time), and the wrapper runs as PID 1 of a PID
namespace of its own with its own /proc, where the job sees only its own processes. One more
fork, a mount namespace and a /proc mount an attempt (0.6-3.4 ms here, bench/pidns_start.py).

With ``cgroup`` (multi-user mode, ``backends.local.cgroups``: directory -> files to write, from
jobs/attempt_limits.py) the child, still root, makes the attempt's cgroup and moves itself into it
first (:func:`_confine`, a few cgroupfs writes): the wrapper, the job and all they start are held
to the job's cpu, memory and process limits, and the service kills the cgroup as a whole at the
attempt's end. Where that fails the wrapper records why and starts nothing.

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

from ..core import pidns

TYPE_CHECKING = False  # typing is not imported: this process, and so each child, stays small
if TYPE_CHECKING:
    from typing import Any

BOOT = (
    "import sys; sys.path.append(sys.argv.pop(1)); from yitong_services.jobs.launcher import serve; sys.exit(serve())"
)
#: a wrapper started as root without the fork server (multi-user): ``python -I -S -c LAUNCH_AS
#: <services root> UID GID ISOLATE ARGS...`` (:func:`launch_as`)
LAUNCH_AS = (
    "import sys; sys.path.append(sys.argv.pop(1)); from yitong_services.jobs.launcher import launch_as; "
    "from yitong_services.core.pidns import end; end(launch_as(sys.argv[1:]))"
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
        request["argv"] = _confine(request.get("cgroup"), list(request["argv"]))  # as root, before the drop
        anchor = None
        if request.get("uid") is not None:
            anchor = _become(int(request["uid"]), int(request["gid"]), bool(request.get("pid_namespace")))
        os.chdir(request["cwd"])
        # the job's whole environment, handed to its program; not set in this process first
        # (os.environ's clear and update cost half a millisecond of each start)
        code = wrapper.main(list(request["argv"]), request["env"], anchor)
    except BaseException:
        code = 126
    finally:
        pidns.end(code)  # os._exit; in its own namespace, its anchor ends with it at once


def _become(uid: int, gid: int, isolate: bool) -> tuple[int, int] | None:
    """As root: drop to the account (no supplementary groups, not dumpable); with ``isolate``,
    first split into an anchor and PID 1 of a PID namespace of its own (core/pidns.py), both as
    the account. Returns in the process that goes on as the wrapper: the anchor's (pid, start
    ticks) with ``isolate``, else None."""

    def drop() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        _undumpable()  # inherited from the server, but a uid change resets it

    if isolate:
        return pidns.enter(drop)
    drop()
    return None


def _confine(planned: dict | None, argv: list[str]) -> list[str]:
    """As root, before the drop to the account: make the attempt's cgroup and move this process
    into it (``planned``: directory -> files, core/cgroups.py), so the wrapper and all it starts
    are held to the job's size and killed as a whole at its end. The wrapper's arguments, with
    ``--refuse <why>`` when that fails: the wrapper then records why and starts nothing."""
    if not planned:
        return argv
    from ..core import cgroups

    try:
        cgroups.apply(planned)
        cgroups.enter(planned)
        oom = cgroups.oom_file(planned)  # opened as root: the cgroup is root's alone
    except OSError as e:
        return [*argv[:2], "--refuse", f"the attempt's cgroup cannot be made: {e}", *argv[2:]]
    return [*argv[:2], "--oom-fd", str(oom), *argv[2:]] if oom is not None else argv


def launch_as(argv: list[str]) -> int:
    """``UID GID ISOLATE [--cgroup PLAN] WRAPPER-ARGS...``: a wrapper started as root without the fork server
    (:data:`LAUNCH_AS`), which drops to the account (in a namespace of its own when ISOLATE is
    1) as a forked one does, then runs with this process's environment."""
    from . import wrapper

    global _PRCTL
    uid, gid, isolate, *rest = argv
    if rest[:1] == ["--cgroup"]:  # the attempt's cgroup, made and entered as root (jobs/attempt_limits.py)
        rest = _confine(json.loads(rest[1]), rest[2:])
    _PRCTL = _prctl()
    anchor = _become(int(uid), int(gid), isolate == "1")
    return wrapper.main(rest, None, anchor)


def _prepare() -> None:
    """The server's own start: what each forked child inherits ready-made."""
    import gc

    from ..core import cgroups  # noqa: F401 -- the attempts' cgroups (_confine), imported once here too
    from . import wrapper  # noqa: F401 -- imported once here, so a child starts warm

    global _PRCTL
    _PRCTL = _prctl()
    try:
        pidns.prepare()  # ctypes loaded here, not in each child that makes a namespace
    except OSError:
        pass  # a request for a namespace then fails with the sentence of the first use
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
