"""The compute backend interface and the ``yitong.backends`` entry-point group.

A backend turns an admitted job into work on an engine and reports back. The methods are
async, none blocking the event loop:

- ``submit(launch) -> backend_ref``: start the work; the ref (pid, Slurm job id, Kubernetes
  name) is saved in the job row and never recomputed;
- ``poll(ref) -> Polled``: running / succeeded / failed / vanished, with exit code and reason
  (``poll_many(refs)`` asks about many at once; the manager uses it);
- ``cancel(ref)``: stop it (idempotent);
- ``read_log(ref, rank, offset) -> bytes`` and ``ranks(ref)``: per-rank logs, during and after.

Backends register as ``[project.entry-points."yitong.backends"] name = "module:Class"``; a
plugin that fails to load is logged and skipped.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from ..vcs.devices import DEVICES, Devices
from .spec import JobSpec

log = logging.getLogger(__name__)
GROUP = "yitong.backends"


@dataclass
class Launch:
    """Everything a backend needs to start one attempt of a job (plain values)."""

    job_id: int
    attempt: int
    spec: JobSpec
    workdir: Path  # <data_dir>/jobs/<id>: outputs live under it
    cwd: Path  # the submitted code directory, else workdir
    env: dict[str, str]  # platform additions (token, API URL)
    input_paths: dict[str, str] = field(default_factory=dict)
    visible_devices: list[int] = field(default_factory=list)
    vc_quota: dict[str, Any] | None = None  # the VC's quota (Kubernetes: its Kueue ClusterQueue)
    user: str = ""  # the job's owner (hub name): whose account runs it
    #: secrets still being made (the owner's hub token) when the backend says ``late_env``: it
    #: starts the attempt's own process meanwhile and hands them over before the user's program
    late_env: asyncio.Future[dict[str, str]] | None = None


@dataclass
class Polled:
    state: str  # "running" | "succeeded" | "failed" | "vanished"
    exit_code: int | None = None
    reason: str = ""
    finished: str | None = None  # ISO time, when known
    info: dict[str, Any] = field(default_factory=dict)


class SubmissionUnknown(Exception):
    """The engine did not answer a submit or a look-up (a controller or API unreachable or too
    slow): the attempt may or may not be there. Not a failure: the manager keeps the job
    admitted with this as its reason and looks for the attempt again (``adopt``) each tick,
    submitting anew only once the engine answers with no trace of it."""


class Backend(abc.ABC):
    name = "abstract"
    #: ``submit`` takes ``launch.late_env`` (secrets that arrive while it starts); otherwise the
    #: manager waits for them and puts them in ``launch.env`` first
    late_env = False
    #: seconds an engine must have answered "no trace" of an unknown submission before it is
    #: submitted anew: a request the engine received while it did not answer may still be
    #: taken in that long after it answers again (Slurm: twice its MessageTimeout)
    unknown_settle = 0.0
    #: a second submit of the same attempt finds what the first made and completes it (Kubernetes:
    #: the Job's name and attempt label): an unknown submission is simply submitted again
    idempotent_submit = False

    def __init__(self, data_dir: Path, settings: Any = None) -> None:
        self.data_dir = Path(data_dir)
        self.settings = settings
        #: called on the event loop when a backend learns by itself that an attempt ended (the
        #: local backend waits on its wrapper): the manager polls at once instead of at its next tick
        self.on_exit: Callable[[str], None] | None = None

    #: a backend whose poll is a few local reads (no engine to ask) also offers ``poll_many`` as a
    #: blocking function: the manager calls it inside the worker-thread hop that reads the active
    #: jobs and records their ends, rather than in a hop of its own
    look_many: Callable[[list[str]], dict[str, Polled]] | None = None

    def exited(self, ref: str) -> None:
        if self.on_exit is not None:
            self.on_exit(ref)

    @property
    def devices(self) -> Devices:
        """The accelerator table (the settings' ``devices``; the defaults without settings)."""
        table = getattr(self.settings, "devices", None)
        return DEVICES if table is None else table

    @abc.abstractmethod
    async def submit(self, launch: Launch) -> str: ...

    @abc.abstractmethod
    async def poll(self, ref: str) -> Polled: ...

    @abc.abstractmethod
    async def cancel(self, ref: str) -> None: ...

    @abc.abstractmethod
    async def read_log(self, ref: str, rank: int, offset: int = 0) -> bytes: ...

    @abc.abstractmethod
    async def ranks(self, ref: str) -> list[int]: ...

    async def poll_many(self, refs: list[str]) -> dict[str, Polled]:
        """Poll several attempts at once; engines with a list call (``squeue``, a Job list)
        override this so a tick costs one call, not one per job."""
        import asyncio

        polled = await asyncio.gather(*(self.poll(ref) for ref in refs))
        return dict(zip(refs, polled))

    async def adopt(self, job_id: int, attempt: int) -> str | None:
        """The ref of an attempt started but never recorded (after a restart, or a submit that
        ended in :class:`SubmissionUnknown`); None: the engine has no trace of it; raises
        :class:`SubmissionUnknown` while the engine cannot be asked."""
        return None

    def describe(self, ref: str) -> dict[str, Any]:
        """Hosts, ports and how to reach the job, for the job detail."""
        return {}

    async def close(self) -> None:
        """Release clients (HTTP sessions) when the service stops."""
        return None


def builtin() -> dict[str, str]:
    return {
        "local": "yitong_services.jobs.runner_local:LocalBackend",
        "kubernetes": "yitong_services.jobs.runner_kube:KubeBackend",
        "slurm": "yitong_services.jobs.runner_slurm:SlurmBackend",
    }


def load_backend(name: str) -> type[Backend]:
    """The backend class registered under ``name`` (entry points first, then the built-ins)."""
    targets = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    target = targets.get(name) or builtin().get(name)
    if target is None:
        raise LookupError(
            f"no job backend {name!r} (entry-point group {GROUP}: {', '.join(sorted(targets)) or 'none'})"
        )
    module, _, attr = target.partition(":")
    import importlib

    try:
        cls = getattr(importlib.import_module(module), attr)
    except Exception:
        log.exception("job backend %s (%s) failed to load", name, target)
        raise LookupError(f"job backend {name!r} failed to load") from None
    return cls


class Unavailable(Backend):
    """Stands in when the configured backend has no job runner (yet): submits are refused (503)."""

    name = "unavailable"

    def __init__(self, data_dir: Path, settings: Any = None, why: str = "") -> None:
        super().__init__(data_dir, settings)
        self.why = why

    async def submit(self, launch: Launch) -> str:
        raise RuntimeError(self.why)

    async def poll(self, ref: str) -> Polled:
        return Polled("vanished", None, self.why)

    async def cancel(self, ref: str) -> None:
        return None

    async def read_log(self, ref: str, rank: int, offset: int = 0) -> bytes:
        return b""

    async def ranks(self, ref: str) -> list[int]:
        return []


def make_backend(name: str, data_dir: Path, settings: Any = None) -> Backend:
    try:
        return load_backend(name)(data_dir, settings)
    except LookupError as e:
        log.warning("jobs are unavailable: %s", e)
        return Unavailable(data_dir, settings, f"jobs cannot run on the {name} backend: {e}")
