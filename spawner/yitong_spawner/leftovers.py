"""What a local server leaves behind when it ends: the processes it started that outlived it.

JupyterHub stops a user's server by signalling its pid alone. What the server and its kernels
started in sessions of their own (a training script started from a notebook with ``nohup`` or
``start_new_session``, code-server, TensorBoard) is not reached, and a server that is killed
(SIGKILL, the OOM killer) leaves it running, holding memory, devices and ports that the platform
has already released. (Kernels themselves end on their own: ipykernel watches its parent.)

Every process the server and its kernels start inherits the server's environment, where the
spawner puts a random mark (:data:`MARK`, new at each start). When the server has ended, the
processes of its account whose environment carries the mark are stopped: SIGTERM, then SIGKILL
after a grace. Each is signalled through a pidfd opened before its environment was read, so a
pid reused meanwhile is never hit.

Best effort, not a boundary: a process can rewrite the memory that ``/proc/<pid>/environ`` shows,
or start with an environment of its own. In multi-user mode on a host with cgroups the server's
cgroup is the boundary and this is not used (backends.py: everything in it is stopped); this is
the fallback for single-person mode and hosts without them. Blocking (reads of ``/proc``): the
spawner calls these in a worker thread.
"""

from __future__ import annotations

import os
import select
import signal
import time

MARK = "YITONG_SERVER_ID"
PROC = "/proc"
ENVIRON_LIMIT = 1 << 20  # bytes of a process's environment read (the kernel's default cap is 2 MiB)


def marked(mark: str, uid: int, proc: str = PROC) -> list[int]:
    """Pidfds of the live processes of ``uid`` whose environment holds ``MARK=mark`` (the caller
    closes them). Processes that end or change hands during the scan are skipped."""
    needle = f"{MARK}={mark}".encode()
    found = []
    me = os.getpid()
    for name in os.listdir(proc):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat(f"{proc}/{name}").st_uid != uid:
                continue
            pidfd = os.pidfd_open(int(name))
        except OSError:  # gone, or not ours to see
            continue
        try:
            fd = os.open(f"{proc}/{name}/environ", os.O_RDONLY)
            try:
                environ = os.read(fd, ENVIRON_LIMIT)
            finally:
                os.close(fd)
        except OSError:
            environ = b""
        if needle in environ.split(b"\0"):
            found.append(pidfd)
        else:
            os.close(pidfd)
    return found


def _signal(pidfd: int, sig: int) -> None:
    try:
        signal.pidfd_send_signal(pidfd, sig)
    except ProcessLookupError:  # it ended
        pass


def stop(pidfds: list[int], grace: float = 5.0) -> int:
    """SIGTERM each process, SIGKILL those still there after ``grace`` seconds; closes the pidfds.
    Returns how many had to be killed."""
    for pidfd in pidfds:
        _signal(pidfd, signal.SIGTERM)
    waiting = select.poll()
    for pidfd in pidfds:
        waiting.register(pidfd, select.POLLIN)  # readable once the process has ended
    left = set(pidfds)
    deadline = time.monotonic() + grace
    while left and (remaining := deadline - time.monotonic()) > 0:
        for pidfd, _event in waiting.poll(remaining * 1000):
            left.discard(pidfd)
            waiting.unregister(pidfd)
    for pidfd in left:
        _signal(pidfd, signal.SIGKILL)
    for pidfd in pidfds:
        os.close(pidfd)
    return len(left)
