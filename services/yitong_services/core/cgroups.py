"""Kernel limits for local workloads: each job attempt, notebook server and model replica in a
cgroup of its own, with its memory, CPU and process limits, killed as a whole when it ends.

Layouts (:func:`detect`): cgroup v2 (``/sys/fs/cgroup`` is a cgroup2 mount: ``cgroup.controllers``
there), and v1 (one hierarchy per controller, ``/sys/fs/cgroup/{memory,cpu,pids,freezer}``; a
systemd "hybrid" host's empty v2 mount at ``unified/`` is ignored unless it holds the memory
controller). Anything else, or a hierarchy this process cannot write (not root, a read-only
mount), is ``none``, with the sentence why.

Names: every workload of one platform instance sits under one parent, ``yitong-<hash of the
data directory>`` (:func:`parent_name`) at the hierarchy's root, so two platforms on one host never
share or sweep each other's: ``yitong-3f2a.../job-12-0``, ``.../server-alice``, ``.../replica-...``.

What is written (pure builders :func:`files_v2`, :func:`files_v1`, :func:`plan`; the values
from the request, cpu in cores, memory in bytes):

- v2: ``memory.max``, ``memory.swap.max`` 0 (where swap is accounted), ``cpu.max`` ``"<quota>
  100000"`` (a hard quota: ``cpu`` cores' worth of every 100 ms, what the VC's quota counts, not a
  weight), ``pids.max``;
- v1: ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` (memory plus swap: no swap
  beyond the limit, where swap is accounted), ``cpu.cfs_period_us`` / ``cpu.cfs_quota_us``,
  ``pids.max``; a cgroup in the freezer hierarchy (no limit) for the kill.

``pids.max`` counts tasks, threads included, as the kernel's pids controller does.

The kill (:func:`kill`): v2 ``cgroup.kill``; where there is none (v2 before Linux 5.14) or on v1,
the cgroup is frozen (``cgroup.freeze`` / ``freezer.state`` FROZEN), every process in it gets
SIGKILL, it is thawed, and again until it is empty: a process forking meanwhile cannot escape, a
frozen one cannot fork. ``setsid``, a double fork or a new process group do not leave a cgroup;
only root can move a process out, and the workloads never run as root.

OOM kills (:func:`oom_kills`): v2 ``memory.events`` and v1 ``memory.oom_control`` count them as
``oom_kill N``.

Stdlib only and cheap to import (the job fork server imports it; :func:`parent_name` imports
hashlib when called). Blocking: a few small cgroupfs reads and writes, microseconds each; a kill
waits for the killed processes to go (milliseconds). For callers elsewhere (model replicas):
``dirs = confine(pid, name, {"cpu": 1.0, "memory": 2**30}, parent=parent_name(data_dir))``, then
``kill(dirs)`` and ``remove(dirs)`` when the workload ends.
"""

from __future__ import annotations

import errno
import os
import signal
import time

TYPE_CHECKING = False  # typing is not imported (see jobs/launcher.py)
if TYPE_CHECKING:
    from typing import Any

ROOT = "/sys/fs/cgroup"
PERIOD = 100_000  # microseconds: the CFS period the quota is a share of
MIN_QUOTA = 1000  # the kernel refuses a quota under 1 ms a period
DEFAULT_MAX_PROCESSES = 4096
V2_CONTROLLERS = ("memory", "cpu", "pids")
V1_CONTROLLERS = ("memory", "cpu", "pids", "freezer")
#: files that exist only where the kernel accounts swap: skipped where they are missing
OPTIONAL = frozenset({"memory.swap.max", "memory.memsw.limit_in_bytes"})


class Layout:
    """This host's cgroups: ``kind`` ``"v2"`` | ``"v1"`` | ``"none"``, ``mounts`` (controller ->
    hierarchy directory; v2: ``{"": root}``), ``missing`` (wanted controllers absent) and, for
    ``none``, ``why`` (a sentence)."""

    __slots__ = ("kind", "mounts", "missing", "why")

    def __init__(self, kind: str, mounts: dict[str, str], missing: list[str] = (), why: str = "") -> None:  # type: ignore[assignment]
        self.kind, self.mounts, self.missing, self.why = kind, dict(mounts), list(missing), why

    def __repr__(self) -> str:
        return f"Layout({self.kind!r}, {self.mounts!r}, {self.missing!r}, {self.why!r})"

    def describe(self) -> str:
        """``"cgroup v1 (memory, cpu, pids, freezer)"``, or the reason there are none."""
        if self.kind == "none":
            return self.why
        have = [c for c in (V2_CONTROLLERS if self.kind == "v2" else V1_CONTROLLERS) if c not in self.missing]
        text = f"cgroup {self.kind} ({', '.join(have)})"
        return text + (f", without {', '.join(self.missing)}" if self.missing else "")


def _read(path: str) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536).decode()
    finally:
        os.close(fd)


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def detect(root: str = ROOT) -> Layout:
    """Which layout ``root`` holds (reads the tree only: a fake one in tests)."""
    if os.path.exists(f"{root}/cgroup.controllers"):
        have = _read(f"{root}/cgroup.controllers").split()
        if "memory" not in have:
            return Layout("none", {}, why=f"the cgroup v2 hierarchy at {root} has no memory controller")
        return Layout("v2", {"": root}, [c for c in V2_CONTROLLERS if c not in have])
    v1 = {c: f"{root}/{c}" for c in V1_CONTROLLERS if os.path.exists(f"{root}/{c}/cgroup.procs")}
    if "memory" in v1:
        return Layout("v1", v1, [c for c in V1_CONTROLLERS if c not in v1])
    unified = f"{root}/unified"
    if os.path.exists(f"{unified}/cgroup.controllers"):
        have = _read(f"{unified}/cgroup.controllers").split()
        if "memory" in have:
            return Layout("v2", {"": unified}, [c for c in V2_CONTROLLERS if c not in have])
    return Layout("none", {}, why=f"no cgroup hierarchy with the memory controller under {root}")


def parent_name(data_dir: str | os.PathLike[str]) -> str:
    """The instance's parent cgroup: ``yitong-`` and 12 hex digits of its data directory's real path."""
    import hashlib

    digest = hashlib.sha256(os.path.realpath(os.fspath(data_dir)).encode()).hexdigest()
    return f"yitong-{digest[:12]}"


def safe_name(text: str) -> str:
    """``text`` as one cgroup directory name: kept when it is plain (letters, digits, ``._-``), else
    its plain letters and a short hash (``alice@x`` -> ``alice-x-<8 hex>``)."""
    plain = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in text)[:64]
    if plain == text and text not in ("", ".", ".."):
        return text
    import hashlib

    return f"{plain.strip('.') or 'x'}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def quota(cpu: float) -> int:
    """``cpu`` cores as microseconds of each :data:`PERIOD` (at least the kernel's 1 ms)."""
    return max(MIN_QUOTA, round(float(cpu) * PERIOD))


def weight(cpu: float, v2: bool) -> int:
    """``cpu`` cores as the cgroup's scheduling weight among its siblings, so that when the CPUs
    are contended each workload's share follows its request (as the kubelet sets a pod's): v2's
    ``cpu.weight`` 100 a core (1-10000), v1's ``cpu.shares`` 1024 a core (2-262144)."""
    if v2:
        return min(10_000, max(1, round(float(cpu) * 100)))
    return min(262_144, max(2, round(float(cpu) * 1024)))


def files_v2(limits: dict[str, Any]) -> dict[str, str]:
    """The v2 files to write for ``limits`` (``cpu`` cores, ``memory`` bytes, ``pids``), in order."""
    out: dict[str, str] = {}
    if limits.get("memory"):
        out["memory.max"] = str(int(limits["memory"]))
        out["memory.swap.max"] = "0"
    if limits.get("cpu"):
        out["cpu.max"] = f"{quota(limits['cpu'])} {PERIOD}"
        out["cpu.weight"] = str(weight(limits["cpu"], v2=True))
    if limits.get("pids"):
        out["pids.max"] = str(int(limits["pids"]))
    return out


def files_v1(limits: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The v1 files per controller (memory before memory+swap: the kernel wants memsw >= memory)."""
    out: dict[str, dict[str, str]] = {c: {} for c in V1_CONTROLLERS}
    if limits.get("memory"):
        size = str(int(limits["memory"]))
        out["memory"] = {"memory.limit_in_bytes": size, "memory.memsw.limit_in_bytes": size}
    if limits.get("cpu"):
        out["cpu"] = {
            "cpu.cfs_period_us": str(PERIOD),
            "cpu.cfs_quota_us": str(quota(limits["cpu"])),
            "cpu.shares": str(weight(limits["cpu"], v2=False)),
        }
    if limits.get("pids"):
        out["pids"] = {"pids.max": str(int(limits["pids"]))}
    return out


def plan(layout: Layout, parent: str, name: str, limits: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The workload's cgroup directories (one per hierarchy), each with the files to write (pure)."""
    if layout.kind == "v2":
        files = files_v2(limits)
        keep = {k: v for k, v in files.items() if k.split(".", 1)[0] not in layout.missing}
        return {f"{layout.mounts['']}/{parent}/{name}": keep}
    if layout.kind == "v1":
        wanted = files_v1(limits)
        out: dict[str, dict[str, str]] = {}
        for controller, mount in layout.mounts.items():
            out.setdefault(f"{mount}/{parent}/{name}", {}).update(wanted.get(controller, {}))
        return out
    return {}


def _enable(directory: str, controllers: list[str]) -> None:
    """v2: let ``directory``'s children have ``controllers`` (its ``cgroup.subtree_control``)."""
    have = _read(f"{directory}/cgroup.subtree_control").split()
    for c in controllers:
        if c not in have:
            _write(f"{directory}/cgroup.subtree_control", f"+{c}")


def prepare(layout: Layout, parent: str) -> Layout:
    """Make the instance's parent in each hierarchy (v2: with the controllers delegated to its
    children); ``layout``, or ``none`` with the reason this process cannot."""
    if layout.kind == "none":
        return layout
    try:
        if layout.kind == "v2":
            root = layout.mounts[""]
            controllers = [c for c in V2_CONTROLLERS if c not in layout.missing]
            _enable(root, controllers)
            os.makedirs(f"{root}/{parent}", exist_ok=True)
            _enable(f"{root}/{parent}", controllers)
        else:
            for mount in layout.mounts.values():
                os.makedirs(f"{mount}/{parent}", exist_ok=True)
    except OSError as e:
        where = next(iter(layout.mounts.values()))
        if e.errno in (errno.EACCES, errno.EPERM):
            why = f"this process (uid {os.geteuid()}) may not create cgroups under {where} (it needs root)"
        elif e.errno == errno.EROFS:
            why = f"the cgroup hierarchy at {where} is mounted read-only (a container without cgroup rights?)"
        elif e.errno == errno.EBUSY:
            why = (
                f"the cgroup v2 root {where} holds processes of its own, so it cannot hand controllers "
                "to new cgroups (a container's cgroup namespace?)"
            )
        else:
            why = f"cgroups under {where} cannot be created: {e.strerror or e}"
        return Layout("none", {}, why=why)
    return layout


_USABLE: dict[tuple[str, str], Layout] = {}


def usable(parent: str, root: str = ROOT) -> Layout:
    """:func:`detect` then :func:`prepare`, once per process for each ``(root, parent)``."""
    key = (root, parent)
    if key not in _USABLE:
        _USABLE[key] = prepare(detect(root), parent)
    return _USABLE[key]


def apply(planned: dict[str, dict[str, str]]) -> None:
    """Create the planned cgroups and write their limits (as root); OSError with the file's name."""
    for directory, files in planned.items():
        try:
            os.mkdir(directory, 0o700)  # root's alone: nobody reads another's usage or pids
        except FileExistsError:
            pass
        except FileNotFoundError:  # the instance's parent went (an admin's cleanup): v1 needs no more
            os.makedirs(directory, 0o700, exist_ok=True)
        for name, value in files.items():
            try:
                _write(f"{directory}/{name}", value)
            except FileNotFoundError:
                if name not in OPTIONAL:
                    raise
            except OSError as e:
                raise OSError(e.errno, f"cannot write {value} to {directory}/{name}: {e.strerror}") from None


def enter(dirs: list[str] | dict[str, Any], pid: int = 0) -> None:
    """Move ``pid`` (0: this process) into each of ``dirs``; its children then start there.

    This process, single-threaded, on v1: through ``tasks`` (its one thread), which the kernel
    moves without the global lock a process move takes (``cgroup.procs``: a read-copy-update grace
    period, 5-15 ms of waiting on this machine class when no other move happened just before)."""
    file = "cgroup.procs"
    if pid == 0 and len(os.listdir("/proc/self/task")) == 1:
        file = "tasks"
    for directory in dirs:
        if file == "tasks" and not os.path.exists(f"{directory}/tasks"):  # v2 has none
            _write(f"{directory}/cgroup.procs", "0")
        else:
            _write(f"{directory}/{file}", str(pid))


def confine(pid: int, name: str, limits: dict[str, Any], *, parent: str, root: str = ROOT) -> list[str] | None:
    """For other launch points: ``pid`` (0: this process) in a new cgroup ``name`` with ``limits``;
    its directories (what :func:`kill` and :func:`remove` take), None where there are no cgroups."""
    layout = usable(parent, root)
    if layout.kind == "none":
        return None
    planned = plan(layout, parent, name, limits)
    apply(planned)
    enter(planned, pid)
    return list(planned)


def members(dirs: list[str]) -> set[int]:
    """The processes in the cgroups (none for a directory that is gone)."""
    out: set[int] = set()
    for directory in dirs:
        try:
            out.update(int(p) for p in _read(f"{directory}/cgroup.procs").split())
        except FileNotFoundError:
            pass
    return out


def _settle(path: str, want: str, deadline: float) -> None:
    """Wait (briefly) until the file ``path`` says ``want`` (a freezer's FROZEN, ``frozen 1``)."""
    pause = 0.0005
    while time.monotonic() < deadline:
        try:
            if want in _read(path):
                return
        except FileNotFoundError:
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def _freeze(dirs: list[str], on: bool, deadline: float) -> None:
    for directory in dirs:
        if os.path.exists(f"{directory}/freezer.state"):
            _write(f"{directory}/freezer.state", "FROZEN" if on else "THAWED")
            if on:
                _settle(f"{directory}/freezer.state", "FROZEN", deadline)
            return
        if os.path.exists(f"{directory}/cgroup.freeze"):
            _write(f"{directory}/cgroup.freeze", "1" if on else "0")
            if on:
                _settle(f"{directory}/cgroup.events", "frozen 1", deadline)
            return


def kill(dirs: list[str], timeout: float = 10.0) -> bool:
    """SIGKILL every process in the cgroups and wait until they are gone; False if some were still
    there after ``timeout`` seconds. Nothing to do for an empty or missing cgroup."""
    deadline = time.monotonic() + timeout
    if not members(dirs):
        return True
    killer = next((d for d in dirs if os.path.exists(f"{d}/cgroup.kill")), None)
    pause = 0.0005
    while True:
        left = members(dirs)
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        if killer is not None:
            _write(f"{killer}/cgroup.kill", "1")
        else:  # frozen, none of them can fork between the list and the kill
            _freeze(dirs, True, min(deadline, time.monotonic() + 1))
            try:
                for pid in members(dirs):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            finally:
                _freeze(dirs, False, deadline)
        time.sleep(pause)  # the killed take a moment to exit (a large address space longer)
        pause = min(pause * 2, 0.05)


def terminate(dirs: list[str], grace: float, timeout: float = 10.0) -> int:
    """SIGTERM every process in the cgroups, wait up to ``grace`` seconds for them to end, then
    :func:`kill` the rest; how many had to be killed."""
    for pid in members(dirs):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while (left := members(dirs)) and time.monotonic() < deadline:
        time.sleep(0.05)
    kill(dirs, timeout)
    return len(left)


def parse_count(text: str, key: str) -> int:
    """The number after ``key`` in a ``key value`` file (``memory.events``, ``memory.oom_control``)."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def oom_file(dirs: list[str] | dict[str, Any]) -> int | None:
    """An open descriptor (close-on-exec) of the cgroup's OOM counter (``memory.events`` or
    ``memory.oom_control``), for a process that reads it after it has dropped root; None if none."""
    for directory in dirs:
        for name in ("memory.events", "memory.oom_control"):
            try:
                return os.open(f"{directory}/{name}", os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
    return None


def oom_kills(dirs: list[str]) -> int:
    """How many processes the kernel's OOM killer stopped in the cgroup (0 where it cannot say)."""
    for directory in dirs:
        for name in ("memory.events", "memory.oom_control"):
            try:
                return parse_count(_read(f"{directory}/{name}"), "oom_kill")
            except (FileNotFoundError, ValueError):
                continue
    return 0


def memory_limit(dirs: list[str]) -> int | None:
    """The cgroup's memory limit in bytes (None: none, or no memory cgroup)."""
    for directory in dirs:
        for name in ("memory.max", "memory.limit_in_bytes"):
            try:
                value = _read(f"{directory}/{name}").strip()
            except FileNotFoundError:
                continue
            return None if value == "max" or int(value) >= 1 << 62 else int(value)
    return None


def remove(dirs: list[str], timeout: float = 2.0) -> bool:
    """Remove the (emptied) cgroups; False if one is still busy after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    for directory in dirs:
        while True:
            try:
                os.rmdir(directory)
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() > deadline:
                    return False
                time.sleep(0.01)
    return True


def children(layout: Layout, parent: str, prefix: str = "") -> list[str]:
    """The names of the parent's cgroups (those starting with ``prefix``), in any hierarchy."""
    names: set[str] = set()
    for mount in layout.mounts.values():
        try:
            names.update(e.name for e in os.scandir(f"{mount}/{parent}") if e.is_dir() and e.name.startswith(prefix))
        except FileNotFoundError:
            pass
    return sorted(names)


def remove_parent(layout: Layout, parent: str) -> None:
    """An instance's whole tree gone: every workload in it killed, its cgroups and the parent
    removed (a test's platform at its end)."""
    for name in children(layout, parent):
        dirs = dirs_of(layout, parent, name)
        kill(dirs)
        remove(dirs)
    remove([f"{mount}/{parent}" for mount in layout.mounts.values()])


def dirs_of(layout: Layout, parent: str, name: str) -> list[str]:
    """The cgroup ``name``'s directories in each hierarchy (pure)."""
    return list(plan(layout, parent, name, {}))
