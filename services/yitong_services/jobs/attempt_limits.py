"""Each local job attempt's cgroup (core/cgroups.py), in multi-user mode: the job's ``cpu`` as a
hard CPU quota, its ``memory`` as the memory limit (no swap beyond it), at most
``backends.local.max_processes`` tasks.

Who does what:

- the service plans it (:meth:`AttemptLimits.plan`: the directories and the files to write,
  plain values that travel in the fork server's request);
- the attempt's root child makes it and moves itself in before it drops to the owner's account
  (jobs/launcher.py ``_confine``), so the wrapper, the job and everything they start are in it;
  when that fails the wrapper starts nothing and records why;
- the wrapper tells an OOM kill from any other SIGKILL (``--oom-fd``: the cgroup's OOM counter) and
  writes "memory limit 256Mi exceeded" as the reason;
- the service ends it once the attempt is over (:meth:`AttemptLimits.end`, from
  runner_local's look at the attempt): every process left in it is killed, whatever session or
  process group it made, then it is removed. An attempt adopted after a restart keeps its cgroup:
  it outlives the service.

The name is ``<parent>/job-<id>-<attempt>`` (the attempt directory says both), under the
instance's parent ``yitong-<hash of the data directory>``.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from ..core import cgroups
from ..core.confinement import cgroup_parent, cgroup_settings
from ..vcs.quantities import format_amount

log = logging.getLogger(__name__)


class AttemptLimits:
    """The cgroups of one platform instance's job attempts."""

    def __init__(self, layout: cgroups.Layout, parent: str, max_processes: int) -> None:
        self.layout, self.parent, self.max_processes = layout, parent, max_processes

    @classmethod
    def of(cls, settings: Any) -> AttemptLimits | None:
        """For multi-user mode: None when ``backends.local.cgroups`` is false or this host has no
        cgroups this process can use (said at start, core/confinement.py). Blocking, once."""
        enabled, most = cgroup_settings(settings)
        if not enabled:
            return None
        parent = cgroup_parent(settings)
        layout = cgroups.usable(parent)
        if layout.kind == "none":
            log.warning("job attempts run without kernel limits: %s", layout.why)
            return None
        return cls(layout, parent, most)

    @staticmethod
    def name(here: Path) -> str:
        """``job-<id>-<attempt>`` of the attempt directory ``<data_dir>/jobs/<id>/attempt-<n>``."""
        return f"job-{here.parent.name}-{here.name.removeprefix('attempt-')}"

    def dirs(self, here: Path) -> list[str]:
        return cgroups.dirs_of(self.layout, self.parent, self.name(here))

    def plan(self, here: Path, cpu: float, memory: int) -> dict[str, dict[str, str]]:
        """The attempt's cgroup directories and the files to write in each (pure)."""
        limits = {"cpu": cpu, "memory": memory, "pids": self.max_processes}
        return cgroups.plan(self.layout, self.parent, self.name(here), limits)

    @staticmethod
    def wrapper_args(memory: int) -> list[str]:
        """The wrapper's ``--memory TEXT``: the limit as an OOM kill's reason says it (the root
        child adds ``--oom-fd``, the cgroup's OOM counter opened before it dropped root)."""
        return ["--memory", format_amount("memory", memory)]

    def oom_reason(self, here: Path) -> str | None:
        """When the attempt left no exit record: the reason, if the OOM killer stopped something in
        its cgroup (it may have chosen the wrapper itself)."""
        dirs = self.dirs(here)
        if not cgroups.oom_kills(dirs):
            return None
        limit = cgroups.memory_limit(dirs)
        amount = format_amount("memory", limit) if limit else "its"
        return f"memory limit {amount} exceeded (the kernel stopped the job's supervisor too)"

    def end(self, here: Path, keep: bool = False) -> None:
        """Kill what is left of the attempt and remove its cgroup (``keep``: leave the emptied
        cgroup, whose OOM counter is the attempt's only record; the sweep at start removes it)."""
        dirs = self.dirs(here)
        if not cgroups.kill(dirs):
            log.warning("processes of %s did not end on SIGKILL", self.name(here))
        if not keep:
            cgroups.remove(dirs)

    def sweep(self) -> int:
        """At start: remove the empty attempt cgroups a previous run left (one with processes is a
        running attempt's, which the service adopts); how many were removed."""
        removed, now = 0, time.time()
        for name in cgroups.children(self.layout, self.parent, "job-"):
            dirs = cgroups.dirs_of(self.layout, self.parent, name)
            if any(now - _made(d) < RECENT for d in dirs):  # one being made and entered right now
                continue
            if not cgroups.members(dirs) and cgroups.remove(dirs, timeout=0):
                removed += 1
        return removed


RECENT = 60.0  # seconds: a younger attempt cgroup may be one whose root child has yet to enter it


def _made(directory: str) -> float:
    try:
        return os.stat(directory).st_ctime
    except FileNotFoundError:
        return 0.0
