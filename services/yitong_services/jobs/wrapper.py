"""``python -m yitong_services.jobs.wrapper ATTEMPT_DIR MAX_RUN_TIME [--cwd DIR] [--mkdir DIR]... [--log FILE] [--env-stdin] -- ARGV...``:
one job attempt.

Started by the local runner in its own session, so it outlives a restart of the platform
service; in multi-user mode it already runs as the job owner's account, so it creates the
attempt directory, its ``logs/`` and the ``--mkdir`` directories (outputs) itself, and enters
``--cwd`` (the submitted code directory) with that account's rights. With ``--env-stdin`` it
reads one JSON line of environment (the owner's token, minted while this process started) from
stdin first, and on an empty stdin exits leaving nothing (no pid, no exit record). It writes ``ATTEMPT_DIR/pid`` (``<pid> <start ticks>``), spawns ARGV (output to
``--log FILE``, else ``launcher.log``) and appends the exit record to ``pid`` as a second line
(JSON: exit_code, end, reason) when ARGV ends, is killed by ``max_run_time`` (seconds, 0 =
none) or is cancelled (SIGTERM to the group): a line, not a new file, because a new file costs
far more than a line on some filesystems (a trial's whole start is a few dozen of them). A
restarted service reads this file to learn what happened while it was down; an attempt started
by an older wrapper has its exit record in ``ATTEMPT_DIR/exit``, which is still read.

In its own PID namespace (multi-user mode, core/pidns.py) this process is the namespace's PID 1:
the pid file names its anchor in the host's namespace (what the service tracks), it reaps the
job's orphans, ``max_run_time`` reaches every process of the namespace, and when it exits the
kernel ends whatever the job left running there.

In its cgroup (multi-user mode, jobs/attempt_limits.py: ``--oom-fd FD --memory TEXT``) the job's
program starts with a higher ``oom_score_adj`` than this process, so the kernel's OOM killer stops
the job, not its supervisor; an attempt that ends after an OOM kill has the reason "memory limit
256Mi exceeded" (FD: the cgroup's OOM counter, opened by the root child), not a bare SIGKILL.
``--refuse WHY``: its cgroup could not be made; the attempt records WHY and starts nothing.

The job's result: ARGV gets the write end of a pipe as ``$YITONG_RESULT_FD``. What it writes
there, one JSON object of metric names to numbers per line, is read while it runs; the last
complete line goes in the exit record as ``result`` (the service merges it into the run's
metrics, as ``POST /jobs/{id}/metrics`` does). A trial's final result takes this way on the
local backend: no file to create, no round trip.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import signal
import sys
import time
from datetime import UTC, datetime

from .procs import group_members, start_time, write_atomic

RESULT_FD = "YITONG_RESULT_FD"
#: beside the attempt folder (``attempt-<n>.why``): why the attempt could not be set up, where no
#: pid file could be written (runner_local reads it, or finds the cause itself, setup_failure too)
WHY = ".why"
RESULT_LIMIT = 1 << 16  # bytes of one result line; a longer one is dropped

#: how the local runner starts this module: ``python -I -S -c LAUNCH <services root> ARGS...``.
#: No site (no scan of site-packages, no .pth files) and only the stdlib and this package: it
#: runs in front of every job, and a trial's whole run may be shorter than a full start.
LAUNCH = (
    "import sys; sys.path.append(sys.argv.pop(1)); "
    "from yitong_services.jobs.wrapper import main; sys.exit(main(sys.argv[1:]))"
)


def _kill_group(sig: int, isolated: bool = False) -> None:
    """``sig`` to the attempt's processes: as PID 1 of its own namespace (``isolated``) every
    other process in it, even one that left the group (``kill(-1)`` there reaches no one else),
    else the members of this process's group."""
    if isolated:
        try:
            os.kill(-1, sig)
        except ProcessLookupError:
            pass
        return
    me = os.getpid()
    for pid in group_members(os.getpgid(0)):
        if pid != me:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


class LastLine:
    """The last complete line of what arrives (each at most ``RESULT_LIMIT`` bytes; a longer
    line is skipped whole)."""

    def __init__(self) -> None:
        self.line: bytes | None = None
        self._tail = b""
        self._skipping = False

    def feed(self, data: bytes) -> None:
        *lines, tail = (self._tail + data).split(b"\n")
        for line in lines:
            if not self._skipping and len(line) <= RESULT_LIMIT:
                self.line = line
            self._skipping = False
        if len(tail) > RESULT_LIMIT:
            tail, self._skipping = b"", True
        self._tail = tail

    def result(self) -> dict | None:
        try:
            found = json.loads(self.line) if self.line is not None else None
        except ValueError:
            return None
        return found if isinstance(found, dict) else None


def _drain(fd: int, into: LastLine, budget: int = 1 << 20) -> bool:
    """Read what is there without waiting, at most ``budget`` bytes (a writer that never stops
    must not keep this from its other work); False at the end (every writer has closed it)."""
    while budget > 0:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return True
        if not data:
            return False
        into.feed(data)
        budget -= len(data)
    return True


def _reap(child: int) -> int | None:
    """As a namespace's PID 1: reap what has ended (orphans of the job are this process's to
    reap); the wait status of ``child`` if it was among them."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid == 0:
            return None
        if pid == child:
            return status


def main(argv: list[str], env: dict[str, str] | None = None, anchor: tuple[int, int] | None = None) -> int:
    """Run one attempt; ``env``: the job's whole environment (None: this process's). ``anchor``:
    this process is PID 1 of the attempt's own PID namespace (core/pidns.py) and ``anchor`` the
    host's (pid, start ticks) of the process the platform tracks, which the pid file names."""
    attempt_dir, limit, *rest = argv
    cwd, make, log, env_stdin = None, [], "launcher.log", False
    oom, memory, refuse = None, "", None  # the attempt's cgroup (jobs/attempt_limits.py)
    while rest and rest[0] in ("--cwd", "--mkdir", "--log", "--env-stdin", "--oom-fd", "--memory", "--refuse"):
        if rest[0] == "--env-stdin":
            env_stdin = True
            rest = rest[1:]
            continue
        if rest[0] == "--cwd":
            cwd = rest[1]
        elif rest[0] == "--log":
            log = rest[1]
        elif rest[0] == "--oom-fd":
            oom = int(rest[1])
        elif rest[0] == "--memory":
            memory = rest[1]
        elif rest[0] == "--refuse":
            refuse = rest[1]
        else:
            make.append(rest[1])
        rest = rest[2:]
    sep, *command = rest
    assert sep == "--" and command, (
        "usage: wrapper ATTEMPT_DIR MAX_RUN_TIME [--cwd DIR] [--mkdir DIR]... [--log FILE] [--oom-fd FD --memory TEXT]"
        " [--refuse WHY] -- ARGV..."
    )
    here = attempt_dir
    if env_stdin:  # secrets the platform made while this started: one JSON line, then EOF
        raw = sys.stdin.buffer.readline(1 << 20)
        sys.stdin.close()
        if not raw.strip():  # the platform could not make them, or stopped: leave no trace, so
            return 125  # a restarted platform starts this attempt again rather than adopting it
        env = {**(os.environ if env is None else env), **json.loads(raw)}
    pid, started = anchor if anchor is not None else (os.getpid(), start_time(os.getpid()))
    step = "create the attempt folder"
    try:
        os.makedirs(os.path.join(here, "logs"), exist_ok=True)
        step = "create the job's outputs folder"
        for d in make:
            os.makedirs(d, exist_ok=True)
        step = "write the attempt's pid file"
        write_atomic(os.path.join(here, "pid"), f"{pid} {started}\n")
    except OSError as e:  # nothing can run: say why beside the folder, where the service looks
        with contextlib.suppress(OSError):
            write_atomic(here.rstrip("/") + WHY, setup_failure(e, step) + "\n")
        return 125
    if refuse is not None:  # its cgroup could not be made: nothing runs unconfined
        _record_exit(here, {"exit_code": 126, "end": _now(), "reason": refuse})
        return 126
    cancelled = False

    def on_term(_sig, _frame):  # the service signals the whole group; the child stops itself
        nonlocal cancelled
        cancelled = True

    signal.signal(signal.SIGTERM, on_term)
    reason = ""
    results, result_w = os.pipe()
    os.set_blocking(results, False)
    env = {**(os.environ if env is None else env), RESULT_FD: str(result_w)}
    # ``log`` itself when it is absolute; a descriptor, not a file object (see procs._read)
    out = os.open(os.path.join(here, log), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
    try:
        try:
            child = spawn(command, env, out, result_w, cwd)
        except OSError as e:
            _record_exit(here, {"exit_code": 127, "end": _now(), "reason": f"cannot start: {e}"})
            return 127
        finally:
            os.close(result_w)
        if oom is not None:
            _oom_first(child)
        deadline = time.monotonic() + float(limit) if float(limit) > 0 else None
        # woken by the child's end itself (a pidfd), not by a wait's timed sleeps, which notice an
        # end late; and by its result lines, read as they come (a pipe's buffer is small)
        ended, child_fd, result = select.poll(), os.pidfd_open(child), LastLine()
        ended.register(child_fd, select.POLLIN)
        ended.register(results, select.POLLIN)
        isolated = anchor is not None
        while True:
            events = dict(ended.poll(500))
            if events.get(results) and not _drain(results, result):
                ended.unregister(results)
            status = _reap(child) if isolated else None  # an orphan's end, or the child's
            if status is None and child_fd in events:
                status = os.waitpid(child, 0)[1]
            if status is not None:
                rc = os.waitstatus_to_exitcode(status)
                _drain(results, result)  # what it wrote just before it ended
                break
            if deadline is not None and time.monotonic() > deadline and not reason:
                reason = f"max_run_time of {int(float(limit))}s exceeded"
                _kill_group(signal.SIGTERM, isolated)
                deadline = time.monotonic() + 5
            elif reason and deadline is not None and time.monotonic() > deadline:
                _kill_group(signal.SIGKILL, isolated)
    finally:
        os.close(out)
    os.close(results)  # a process the job left writing there gets EPIPE
    if rc != 0 and oom is not None and not reason and _oom_kills(oom):
        reason = f"memory limit {memory} exceeded"  # the kernel's OOM killer, not a bare SIGKILL
    if rc < 0 and not reason:
        reason = f"killed by {signal.Signals(-rc).name}"
    if cancelled and not reason:
        reason = "cancelled"
    record: dict = {"exit_code": rc, "end": _now(), "reason": reason}
    if (found := result.result()) is not None and len(json.dumps(found)) <= RESULT_LIMIT:
        record["result"] = found  # bounded as written here too (escapes may lengthen it)
    _record_exit(here, record)
    return 0


#: the job's program's ``oom_score_adj``: within the attempt's cgroup the kernel's OOM killer picks
#: it and what it starts before this wrapper (0), which then records why the job ended
OOM_SCORE_ADJ = 500


def _oom_first(child: int) -> None:
    """Raise the job's ``oom_score_adj`` (an unprivileged raise; the job can lower it back only to
    0, this wrapper's, never below). A process the job forks before this write keeps 0: then the
    OOM killer chooses by size alone, and the service reads the cgroup's counter if it chose this
    wrapper (runner_local)."""
    try:
        fd = os.open(f"/proc/{child}/oom_score_adj", os.O_WRONLY)
    except OSError:  # gone already, or not dumpable (a setuid program)
        return
    try:
        os.write(fd, str(OOM_SCORE_ADJ).encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def _oom_kills(fd: int) -> int:
    """The cgroup's ``oom_kill`` count (``memory.events`` or ``memory.oom_control``, opened for
    this process while it was root), 0 when unreadable."""
    from ..core.cgroups import parse_count

    try:
        return parse_count(os.pread(fd, 4096, 0).decode(), "oom_kill")
    except (OSError, ValueError):
        return 0


def spawn(command: list[str], env: dict[str, str], out: int, keep: int, cwd: str | None) -> int:
    """Start ``command`` (found on ``env``'s PATH, as a shell would) with stdin from /dev/null,
    stdout and stderr to ``out``, ``keep`` open as itself, in ``cwd``: its pid. Every other
    descriptor of this process is made close-on-exec first (Python opens its own so; one this
    process was handed open is made so here), so the job gets none of them. ``posix_spawn`` (a
    vfork and an exec), not ``subprocess``: that module and the ``threading`` it imports would be
    in every forked wrapper's memory (and run their at-fork work in it), and Popen runs several
    times as much Python; an exec that fails raises OSError here, as Popen's does."""
    if cwd is not None:  # the wrapper's own paths are absolute; the job starts where it was told
        os.chdir(cwd)
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            if fd > 2 and os.get_inheritable(fd):
                os.set_inheritable(fd, False)
        except OSError:  # the listing's own descriptor, closed by now
            pass
    os.set_inheritable(keep, True)
    actions = [
        (os.POSIX_SPAWN_DUP2, out, 1),
        (os.POSIX_SPAWN_DUP2, out, 2),
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
    ]
    # a job starts with the signals a shell's child has: SIGPIPE and SIGXFSZ at their defaults
    defaults = (signal.SIGPIPE, signal.SIGXFSZ)
    program = command[0]
    if os.sep in program:
        return os.posix_spawn(program, command, env, file_actions=actions, setsigdef=defaults)
    denied: OSError | None = None
    for folder in os.get_exec_path(env):
        try:
            return os.posix_spawn(os.path.join(folder, program), command, env, file_actions=actions, setsigdef=defaults)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError as e:  # a shell goes on looking, and says so if nothing else runs
            denied = denied or e
    if denied is not None:
        raise denied
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def setup_failure(exc: OSError, step: str = "create the attempt folder") -> str:
    """The reason of an attempt that could not be set up (pure): the cause in words, no path."""
    return f"could not {step}: {os_cause(exc)}"


def os_cause(exc: OSError) -> str:
    """An OS error's cause in words, without the path it names (pure)."""
    if exc.errno == errno.ENOSPC:
        cause = "no space left on the data disk"
    elif exc.errno == errno.EDQUOT:
        cause = "the job owner's disk quota on the data disk is spent"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        cause = f"{os.strerror(exc.errno).lower()} (an administrator must check the job folders' disk)"
    else:
        cause = os.strerror(exc.errno).lower() if exc.errno else "the disk refused it"
    return cause


def _record_exit(here: str, record: dict) -> None:
    """The exit record, as the line after the pid line (a reader takes it once it ends with a
    newline); in ``exit`` where there is no pid file to add it to."""
    line = json.dumps(record) + "\n"
    try:
        fd = os.open(os.path.join(here, "pid"), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
    except OSError:
        write_atomic(os.path.join(here, "exit"), line)
        return
    data = line.encode()
    try:
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.now(UTC).isoformat()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
