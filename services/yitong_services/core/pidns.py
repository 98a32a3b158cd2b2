"""Each workload in a PID namespace of its own, with its own ``/proc``, as a container runtime does.

In multi-user mode a job attempt, a notebook server and an SSH shell into a job must not see
other people's processes: ``ps`` and ``/proc`` show their command lines (secrets passed as
arguments) and environments' sizes, start times, what they wait on. So each starts as PID 1 of
a new PID namespace with a mount namespace of its own, where a fresh ``proc`` is mounted on
``/proc``: it lists only the namespace's processes. Nothing on the host changes: the host's
``/proc`` and its options stay as the admin set them, and the host's ``hidepid=``/``gid=``/
``subset=`` (if any) are carried onto the new mount (:func:`proc_options`). Mounts are made
``MS_SLAVE`` recursively first: the new ``/proc`` does not propagate back to the host, and what
the host mounts later (an automounted home, a new share) still appears inside.

Two processes per workload (root, single-threaded, in :func:`enter`):

- the *anchor*, in the host's namespace: the pid the platform tracks, signals and waits on
  (a service sees host pids; the workload's own pids start at 1). It forwards SIGINT, SIGTERM,
  SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to PID 1 and exits with its status (128 + signal when
  it was killed). It runs as the workload's account.
- *PID 1* of the new namespace, the workload itself (the job's wrapper) or a small init in
  front of it (:func:`enter_exec`, a notebook server): it must reap what is orphaned inside
  and it gets only the signals it has a handler for (the kernel's rule for a namespace's init;
  SIGKILL from outside always). When it ends, the kernel kills everything left in the
  namespace: nothing started there (``setsid``, a double fork) outlives the workload. It dies
  with its anchor (``PR_SET_PDEATHSIG``), so a killed anchor leaves nothing untracked.

Stdlib only (the job fork server imports it); ``ctypes`` is loaded once by :func:`prepare`.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False  # typing is not imported: the fork server's children stay small
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
MS_REC = 0x4000
MS_SLAVE = 0x80000
PR_SET_PDEATHSIG = 1
#: what an anchor passes on to PID 1, and an init to its workload (a stop, a hang-up, a dump)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: the host's /proc mount options a new /proc keeps (who may see which process)
KEPT_OPTIONS = ("hidepid", "gid", "subset")

_LIBC: Any = None


def prepare() -> Any:
    """libc, through ctypes (loaded once: a fork server calls this before it forks)."""
    global _LIBC
    if _LIBC is None:
        import ctypes

        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _call(name: str, *args: Any) -> None:
    libc = prepare()
    if getattr(libc, name)(*args) != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _call("unshare", flags)


def setns(fd: int, nstype: int) -> None:
    _call("setns", fd, nstype)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    import ctypes

    _call(
        "mount",
        source.encode() if source else None,
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )


def proc_options(mountinfo: str) -> str:
    """The options of the host's ``/proc`` that a new one keeps (``hidepid=``, ``gid=``,
    ``subset=``), from ``/proc/self/mountinfo``'s text (pure): its super options of the last
    ``proc`` mounted on ``/proc``."""
    found = ""
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 7 or fields[4] != "/proc" or "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) > dash + 1 and fields[dash + 1] == "proc":
            found = fields[dash + 3] if len(fields) > dash + 3 else ""
    return ",".join(o for o in found.split(",") if o.split("=", 1)[0] in KEPT_OPTIONS)


def _host_proc_options() -> str:
    fd = os.open("/proc/self/mountinfo", os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return proc_options(b"".join(chunks).decode("utf-8", "replace"))


def _start_ticks(pid: int) -> int:
    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    try:
        raw = os.read(fd, 4096).decode("utf-8", "replace")
    finally:
        os.close(fd)
    return int(raw[raw.rindex(")") + 2 :].split()[19])


def _own_proc(options: str) -> None:
    """In PID 1 of a new PID namespace, as root: a mount namespace of its own with a fresh /proc."""
    unshare(CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_SLAVE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)


def _die_with_anchor(alive: int) -> None:
    """After the account's ids are set (a uid change clears it): SIGKILL when the anchor dies;
    ``alive`` is the read end of a pipe only the anchor writes to, at its end already if the
    anchor died before that was said."""
    import ctypes
    import select

    _call("prctl", *(ctypes.c_ulong(v) for v in (PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)))

    poller = select.poll()
    poller.register(alive, select.POLLIN)
    gone = bool(poller.poll(0))
    os.close(alive)
    if gone:
        os._exit(1)


_ENDING = -1  # in PID 1 made by enter(): the pipe to its anchor (see end())


def end(code: int) -> NoReturn:
    """``os._exit(code)``; in PID 1 made by :func:`enter`, the anchor is told ``code`` first and
    exits with it at once (without it, the anchor exits 0 when PID 1's exit is not yet reaped)."""
    if _ENDING >= 0:
        try:
            os.write(_ENDING, bytes([code & 0xFF]))
        except OSError:
            pass
    os._exit(code)


def enter(become: Callable[[], None]) -> tuple[int, int]:
    """Split this process (root, single-threaded) into an anchor and PID 1 of a new namespace;
    ``become`` (drop to the account) runs in both once the namespace is set up. Returns, in PID 1,
    the anchor's host pid and start ticks (what the platform tracks the workload by); the anchor
    never returns. OSError when no namespace can be made (nothing was split then)."""
    options = _host_proc_options()
    unshare(CLONE_NEWPID)  # this process stays where it is; its next child is PID 1 of a new one
    anchor = os.getpid()
    ticks = _start_ticks(anchor)
    alive, held = os.pipe()
    ended, ending = os.pipe()  # PID 1 holds ``ending`` until its exit closes it
    child = os.fork()
    if child:
        os.close(alive)
        os.close(ending)
        _anchor_become(become, child)
        anchor_loop(child, ended)
    os.close(held)
    os.close(ended)
    global _ENDING
    _ENDING = ending
    try:
        _own_proc(options)
        become()
        _die_with_anchor(alive)
    except BaseException:
        os._exit(126)
    return anchor, ticks


def enter_exec(become: Callable[[], None]) -> None:
    """:func:`enter` for a process about to exec its workload (a ``preexec_fn``): the anchor and
    PID 1 exec small programs (this file: ``anchor`` / ``init``, so neither keeps a copy of the
    caller's memory), and this returns in PID 1's child, which goes on to exec the workload."""
    options = _host_proc_options()
    unshare(CLONE_NEWPID)
    alive, held = os.pipe()
    child = _raw_fork()
    if child:
        os.close(alive)
        _anchor_become(become, child)
        _exec("anchor", child, keep=held)
    os.close(held)
    try:
        _own_proc(options)
        become()
        _die_with_anchor(alive)
        workload = _raw_fork()
    except BaseException:
        os._exit(126)
    if workload:
        _exec("init", workload)


def _raw_fork() -> int:
    """fork(2) itself, without Python's at-fork handlers: in a ``preexec_fn`` (already a
    single-threaded copy) they fail; the child execs or returns to the caller's exec."""
    pid = prepare().fork()
    if pid < 0:
        import ctypes

        raise OSError(ctypes.get_errno(), "fork failed")
    return int(pid)


JOIN_REFUSED = 255  # what the joining process exits with when the shell cannot start


def join_argv(pid_ns: int, mnt_ns: int, uid: int | None, gid: int | None, cwd: str, argv: list[str]) -> list[str]:
    """The command that runs ``argv`` inside the PID and mount namespaces whose descriptors are
    ``pid_ns`` and ``mnt_ns`` (a running workload's; passed to it open), as ``uid``/``gid``
    in ``cwd`` entered as that account (pure). Started as root; the process started is the
    anchor of the one that runs ``argv``, whose orphans the namespace's PID 1 reaps. A new
    interpreter, not a ``preexec_fn``: an event loop's child (uvloop's) cannot run this much Python."""
    ids = [str(-1 if uid is None else uid), str(-1 if gid is None else gid)]
    return [
        sys.executable,
        "-I",
        "-S",
        os.path.abspath(__file__),
        "join",
        str(pid_ns),
        str(mnt_ns),
        *ids,
        cwd,
        "--",
        *argv,
    ]


def _join_main(args: list[str]) -> NoReturn:
    pid_ns, mnt_ns, uid, gid = (int(a) for a in args[:4])
    cwd, sep, *argv = args[4:]
    assert sep == "--" and argv

    def become() -> None:
        if uid >= 0:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        os.chdir(cwd)  # with the account's rights: a folder it cannot enter fails here

    def refuse(e: OSError) -> NoReturn:
        sys.stderr.write(f"yitong: the shell cannot start in {cwd} as the job's account ({e.strerror})\n")
        sys.stderr.flush()
        os._exit(JOIN_REFUSED)

    try:
        setns(pid_ns, CLONE_NEWPID)
    except OSError as e:
        refuse(e)
    alive, held = os.pipe()
    child = os.fork()
    if child:
        for fd in (alive, pid_ns, mnt_ns):
            os.close(fd)
        try:
            become()
        except OSError as e:  # PID 1's child fails the same way (or sees this process gone)
            refuse(e)
        anchor_loop(child)
    os.close(held)
    try:
        setns(mnt_ns, CLONE_NEWNS)
        os.close(pid_ns)
        os.close(mnt_ns)
        become()
        _die_with_anchor(alive)
        os.execvp(argv[0], argv)
    except OSError as e:
        refuse(e)
    os._exit(JOIN_REFUSED)


def _anchor_become(become: Callable[[], None], child: int) -> None:
    """``become`` in the anchor; when it fails, PID 1 is killed and the error is the caller's
    (a ``preexec_fn``'s error fails the start, as without a namespace)."""
    try:
        become()
    except BaseException:
        try:  # still root when the drop itself failed; else PID 1 sees this process gone
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass
        raise


def _exec(role: str, child: int, keep: int = -1) -> NoReturn:
    """Exec this file as ``role`` watching ``child``; only descriptors 0-2 (and ``keep``) go along."""
    try:
        if keep >= 0:
            os.closerange(3, keep)
            os.closerange(keep + 1, 1 << 20)
            os.set_inheritable(keep, True)
        else:
            os.closerange(3, 1 << 20)
        os.execv(sys.executable, [sys.executable, "-I", "-S", os.path.abspath(__file__), role, str(child)])
    finally:
        os._exit(126)


def _forward_to(child: int) -> None:
    def forward(sig: int, _frame: Any) -> None:
        try:
            os.kill(child, sig)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)


def _exit_like(status: int) -> NoReturn:
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def anchor_loop(child: int, ended: int = -1) -> NoReturn:
    """The anchor: pass signals on to PID 1, wait for it, exit as it did. With ``ended`` (the
    read end of a pipe only PID 1 holds open), exit as soon as that closes: PID 1's descriptors
    close early in its exit, before the kernel ends the namespace and unmounts its /proc (10-20 ms
    on a busy machine, waiting for RCU), so whoever waits on the anchor (the service, for the exit
    record already written) is not kept waiting for that; PID 1 is reaped by the host's init."""
    _forward_to(child)
    if ended >= 0:
        import select

        poller = select.poll()
        poller.register(ended, select.POLLIN)
        while not poller.poll():
            pass
        said = os.read(ended, 1)  # end()'s code, or nothing (PID 1 was killed, or did not say)
        try:
            pid, status = os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            pid = 0
        if pid:
            _exit_like(status)
        os._exit(said[0] if said else 0)
    try:
        _pid, status = os.waitpid(child, 0)
    except ChildProcessError:
        os._exit(1)
    _exit_like(status)


def init_loop(workload: int) -> NoReturn:
    """PID 1 in front of a workload that is not an init: pass signals on to it, reap every
    orphan, and exit as the workload did (the kernel then ends whatever is left)."""
    _forward_to(workload)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == workload:
            _exit_like(status)


def probe() -> str | None:
    """None when this process can give a workload its own namespaces (root, a kernel that
    allows it: not every container does), else why not. Runs this file as ``probe`` (the
    caller may have threads: it is not forked); blocking, once at start."""
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), "probe", "0"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the namespace check did not run: {e}"
    if done.returncode == 0:
        return None
    return (
        done.stderr.decode(errors="replace").strip().splitlines()[-1:][0]
        if done.stderr.strip()
        else (f"the namespace check ended with {done.returncode}")
    )


def _probe_here() -> NoReturn:
    """The probe itself: a new PID namespace whose PID 1 mounts its own /proc and sees only itself."""
    try:
        options = _host_proc_options()
        unshare(CLONE_NEWPID)
    except OSError as e:
        print(f"no PID namespace can be made here ({e})", file=sys.stderr)
        os._exit(1)
    inner = os.fork()
    if inner == 0:
        try:
            _own_proc(options)
            seen = [n for n in os.listdir("/proc") if n.isdigit()]
        except OSError as e:
            print(f"a namespace's own /proc cannot be mounted here ({e})", file=sys.stderr)
            os._exit(2)
        if seen != ["1"]:
            print(f"a namespace's own /proc shows {len(seen)} processes, not only its own", file=sys.stderr)
            os._exit(3)
        os._exit(0)
    _exit_like(os.waitpid(inner, 0)[1])


if __name__ == "__main__":  # ``python -I -S pidns.py anchor|init|probe PID`` / ``join ...``: the roles above
    if sys.argv[1] == "join":
        _join_main(sys.argv[2:])
    role, watched = sys.argv[1], int(sys.argv[2])
    if role == "probe":
        _probe_here()
    if role == "anchor":
        anchor_loop(watched)
    init_loop(watched)
