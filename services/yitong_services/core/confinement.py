"""Who runs user code on the local backend, and the file modes of the platform's own files.

Two modes (``backends.local.mode``; ``auto``, the default, picks by the process's uid):

- ``multi-user`` (the hub and this service run as root): every hub user maps to a system account
  (``accounts.account_name``: ``yt<tag>-<name>``, the tag this platform's), created on first use by this service with its home
  ``<data_dir>/home/<hub user>`` (0700). Notebook servers (the hub's spawner, told the account by
  ``GET /spawn-options``) and local jobs run with that uid/gid, supplementary groups cleared.
- ``single-person`` (not root, or pinned): notebooks and jobs run as the platform's own account,
  so they can read everything the platform can. Meant for one person on a laptop; said at start,
  in ``GET /health`` and on the admin page.

The platform's files are readable only by its account: the service runs with umask 077,
``<data_dir>`` is 0711 (homes and job directories stay reachable by their owners, nothing is
listable), ``secrets/`` 0700, databases, secrets and logs 0600, the store, cache and
materialised roots 0700.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path
from typing import Any

MODES = ("auto", "multi-user", "single-person")
log = logging.getLogger(__name__)


class ModeError(ValueError):
    """A mode that cannot be had (a bad value, or multi-user without root)."""


def decide(setting: str, euid: int, interpreter_shared: bool = True) -> str:
    """``multi-user`` or ``single-person`` for ``backends.local.mode`` and the process's uid (pure).

    ``auto`` is multi-user only where it can work: as root, with the interpreter and the data
    directory reachable by the people's accounts (``interpreter_shared``; a Python or a data
    directory under /root cannot be)."""
    if setting not in MODES:
        raise ModeError(f"backends.local.mode must be one of {', '.join(MODES)}, not {setting!r}")
    if setting == "auto":
        return "multi-user" if euid == 0 and interpreter_shared else "single-person"
    if setting == "multi-user" and euid != 0:
        raise ModeError(
            "backends.local.mode is multi-user, which needs the hub and the platform service to run "
            "as root (to run each person's code as their own system account)"
        )
    return setting


def message(mode: str, euid: int, user: str, interpreter: str | None = None) -> str:
    """The sentence said at start and on the admin page (pure); ``interpreter`` names the path
    (the Python, or a directory above the data directory) that other accounts cannot reach, the
    reason ``auto`` stayed single-person as root."""
    if mode == "multi-user":
        return (
            "Yitong runs multi-user: each person's notebooks and jobs run as their own system account "
            "(yt<tag>-<name>), never as root nor as the platform's account."
        )
    who = "root" if euid == 0 else user
    text = (
        f"Yitong runs single-person: notebooks and jobs run as {who}, the account that holds the platform's "
        "secrets, so everyone who can log in can act as the platform. Use it for one person only"
    )
    if euid == 0 and interpreter:
        return text + (
            f"; running as root, but {interpreter} is not reachable by other accounts, so notebooks and "
            "jobs cannot run as their own accounts: for multi-user, build the .venv with a Python every "
            "account can run (e.g. /usr/bin/python3) and keep the data directory where every account can "
            "reach it (not under /root or a 0700 directory)."
        )
    if euid == 0:
        return text + "; backends.local.mode is pinned to single-person while running as root: user code runs as root."
    return text + "; start the hub as root for multi-user."


def setting_of(settings: Any) -> str:
    section = (getattr(settings, "backends", None) or {}).get("local")
    extra = dict(getattr(section, "model_extra", None) or {}) if section is not None else {}
    return str(extra.get("mode", "auto"))


def pid_namespaces(settings: Any) -> bool:
    """``backends.local.pid_namespaces`` (default true): in multi-user mode every job attempt,
    notebook server and SSH shell into a job runs in a PID namespace of its own with its own
    ``/proc`` (core/pidns.py), so nobody sees another person's processes or command lines.
    false: they share the host's, where ``ps`` shows everyone's (unless the admin mounts /proc
    with ``hidepid=invisible``). Example: ``backends: {local: {pid_namespaces: false}}``."""
    section = (getattr(settings, "backends", None) or {}).get("local")
    extra = dict(getattr(section, "model_extra", None) or {}) if section is not None else {}
    value = extra.get("pid_namespaces", True)
    if not isinstance(value, bool):
        raise ModeError(f"backends.local.pid_namespaces must be true or false, not {value!r}")
    return value


_PIDNS_CHECK: dict[str, str | None] = {}  # why this machine gives no PID namespaces (checked once)


def pid_namespace_usable(settings: Any) -> bool:
    """Multi-user mode with ``backends.local.pid_namespaces`` on, on a machine that allows them
    (checked once: blocking, it starts a process; the log says why not, once)."""
    if settings.backend != "local" or mode_of(settings) != "multi-user" or not pid_namespaces(settings):
        return False
    if "why" not in _PIDNS_CHECK:
        from . import pidns

        _PIDNS_CHECK["why"] = why = pidns.probe()
        if why is not None:
            log.error(
                "notebooks and jobs run without PID namespaces: %s; each can see every process on this "
                "machine and its command line (mount /proc with hidepid=invisible, or set "
                "backends.local.pid_namespaces to false to say so is meant)",
                why,
            )
    return _PIDNS_CHECK["why"] is None


def unreachable(settings: Any) -> str | None:
    """What people's accounts could not reach: the interpreter, or a directory above the data
    directory (None: both are reachable)."""
    import sys

    if not reachable_by_others(sys.executable):
        return f"the interpreter {os.path.realpath(sys.executable)}"
    data_dir = Path(settings.data_dir).absolute()
    for parent in data_dir.parents:
        with contextlib.suppress(OSError):
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return f"the directory {parent} (above the data directory)"
    return None


def mode_of(settings: Any, euid: int | None = None) -> str:
    """This process's mode for the local backend's notebooks and jobs."""
    euid = os.geteuid() if euid is None else euid
    setting = setting_of(settings)
    shared = setting != "auto" or euid != 0 or unreachable(settings) is None
    return decide(setting, euid, shared)


def _unshared_interpreter(settings: Any, mode: str) -> str | None:
    auto_as_root = setting_of(settings) == "auto" and os.geteuid() == 0
    return unreachable(settings) if mode == "single-person" and auto_as_root else None


def current_user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def describe(settings: Any) -> dict[str, str]:
    """``{"mode", "message", "limits"}`` for ``/health`` and the admin page; in multi-user mode the
    message ends with what holds workloads to their size (:func:`limits`)."""
    mode = mode_of(settings)
    text = message(mode, os.geteuid(), current_user(), _unshared_interpreter(settings, mode))
    held = limits(settings, mode)
    if mode == "multi-user":
        text = f"{text} {held['message']}"
    return {"mode": mode, "message": text, "limits": held["by"]}


# ---- limits (cgroups) -----------------------------------------------------------------------

MAX_PROCESSES_RANGE = (16, 1 << 22)


def cgroup_settings(settings: Any) -> tuple[bool, int]:
    """``backends.local.cgroups`` (default true) and ``backends.local.max_processes`` (default
    4096). Multi-user mode puts each job attempt, notebook server and model replica in a cgroup of
    its own (core/cgroups.py): its memory and cpu as hard limits, at most ``max_processes`` tasks
    (processes and threads), killed as a whole when it ends. ``cgroups: false`` turns that off (the
    bench's on/off comparison): nothing then holds a workload to its size. Example:
    ``backends: {local: {cgroups: true, max_processes: 1024}}``."""
    from .cgroups import DEFAULT_MAX_PROCESSES

    section = (getattr(settings, "backends", None) or {}).get("local")
    extra = dict(getattr(section, "model_extra", None) or {}) if section is not None else {}
    enabled = extra.get("cgroups", True)
    if not isinstance(enabled, bool):
        raise ModeError(f"backends.local.cgroups must be true or false, not {enabled!r}")
    most = extra.get("max_processes", DEFAULT_MAX_PROCESSES)
    low, high = MAX_PROCESSES_RANGE
    if isinstance(most, bool) or not isinstance(most, int) or not low <= most <= high:
        raise ModeError(f"backends.local.max_processes must be a whole number from {low} to {high}, not {most!r}")
    return enabled, most


def cgroup_parent(settings: Any) -> str:
    """This instance's parent cgroup (``yitong-<hash of the data directory>``)."""
    from .cgroups import parent_name

    return parent_name(Path(settings.data_dir).absolute())


def limits(settings: Any, mode: str | None = None) -> dict[str, str]:
    """``{"by", "message"}``: what holds notebooks and jobs to their size. On the local backend
    ``by`` is ``cgroup-v2`` / ``cgroup-v1``, ``off`` (``backends.local.cgroups: false``) or ``none``
    (single-person mode, or no cgroup hierarchy this process can use: the message says why);
    ``kubernetes`` and ``slurm`` on those backends.
    Blocking the first time (it makes the instance's parent cgroup), cached after."""
    from . import cgroups

    if settings.backend == "kubernetes":
        return {"by": "kubernetes", "message": "Each pod has its request as its limits (the kubelet's cgroups)."}
    if settings.backend == "slurm":
        return {
            "by": "slurm",
            "message": "Slurm holds each job to its allocation where its TaskPlugin is task/cgroup (docs/backends.md).",
        }
    mode = mode or mode_of(settings)
    if mode != "multi-user":
        return {"by": "none", "message": "Notebooks and jobs are not held to their size in single-person mode."}
    enabled, most = cgroup_settings(settings)
    loose = (
        "so a notebook or job can use more memory, cpu and processes than it asked for, and what it starts "
        "in a session of its own outlives it"
    )
    if not enabled:
        return {"by": "off", "message": f"Limits are off (backends.local.cgroups is false), {loose}."}
    layout = cgroups.usable(cgroup_parent(settings))
    if layout.kind == "none":
        return {
            "by": "none",
            "message": f"Limits are not enforced: {layout.why}, {loose}. Run the platform as root on a host "
            "with cgroup v2, or v1 with the memory, cpu and pids controllers, to enforce them.",
        }
    return {
        "by": f"cgroup-{layout.kind}",
        "message": f"Limits are enforced by the kernel ({layout.describe()}): each job attempt and notebook "
        f"server runs in a cgroup of its own with its memory and cpu as hard limits and at most {most} "
        "processes and threads, and is killed as a whole when it ends.",
    }


def server_cgroup(settings: Any) -> dict[str, Any] | None:
    """For the hub's spawner (the account in ``GET /spawn-options``): ``{"parent", "max_processes"}``
    when notebook servers get a cgroup of their own (multi-user, ``backends.local.cgroups`` on and
    usable here), else None."""
    if not limits(settings)["by"].startswith("cgroup"):
        return None
    return {"parent": cgroup_parent(settings), "max_processes": cgroup_settings(settings)[1]}


# ---- files --------------------------------------------------------------------------------


def _chmod(path: Path, mode: int) -> None:
    with contextlib.suppress(FileNotFoundError, PermissionError):
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) != mode:
            os.chmod(path, mode)


def private_dir(path: Path, mode: int = 0o700) -> Path:
    """A directory of the platform's (created if missing) with exactly ``mode``."""
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    _chmod(path, mode)
    return path


def secure_data_dir(data_dir: Path, roots: list[Path] = ()) -> None:  # type: ignore[assignment]
    """``<data_dir>`` 0711, ``secrets/`` 0700 with 0600 files, top-level files (databases, pid,
    logs) 0600, ``home/`` and ``jobs/`` 0711, and each of ``roots`` (store, cache, materialised) 0700."""
    data_dir = Path(data_dir).absolute()
    private_dir(data_dir, 0o711)
    secrets = private_dir(data_dir / "secrets", 0o700)
    for entry in secrets.iterdir():
        _chmod(entry, 0o700 if entry.is_dir() and not entry.is_symlink() else 0o600)
    for entry in data_dir.iterdir():
        if entry.is_file() and not entry.is_symlink():
            _chmod(entry, 0o600)
    for name in ("home", "jobs"):
        private_dir(data_dir / name, 0o711)
    for root in roots:
        private_dir(Path(root), 0o700)


def reachable_by_others(path: str | os.PathLike[str]) -> bool:
    """Whether an unprivileged account can execute ``path`` (its real path: every directory
    above it searchable by others, the file executable by others), e.g. the interpreter."""
    real = Path(os.path.realpath(path))
    try:
        if not os.stat(real).st_mode & stat.S_IXOTH:
            return False
        return all(os.stat(p).st_mode & stat.S_IXOTH for p in real.parents)
    except OSError:
        return False


def startup(settings: Any) -> str:
    """At service start: umask 077, the data directory's modes, and one clear line on the mode."""
    import sys

    os.umask(0o077)
    mode = mode_of(settings)
    if settings.backend == "local":
        roots = [settings.cache_dir, settings.materialize_dir]
        if settings.storage_url.startswith("file://"):
            roots.append(Path(settings.storage_url[len("file://") :]))
        secure_data_dir(settings.data_dir, roots)
        text = message(mode, os.geteuid(), current_user(), _unshared_interpreter(settings, mode))
        (log.info if mode == "multi-user" else log.warning)("%s", text)
        if mode == "multi-user":  # what holds workloads to their size, or why nothing does
            held = limits(settings, mode)
            (log.info if held["by"].startswith("cgroup") else log.warning)("%s", held["message"])
        if mode == "multi-user" and not all(
            os.stat(p).st_mode & stat.S_IXOTH for p in Path(settings.data_dir).absolute().parents
        ):
            log.error(
                "a directory above the data directory %s is not searchable by other accounts: notebooks "
                "and jobs cannot reach their homes and job directories",
                settings.data_dir,
            )
        if mode == "multi-user" and not reachable_by_others(sys.executable):
            log.error(
                "the interpreter %s is not reachable by other accounts (a directory above it is not "
                "searchable by others): notebooks and jobs will fail to start. Install Python where every "
                "account can read it (e.g. /opt or /usr/local)",
                os.path.realpath(sys.executable),
            )
    else:
        secure_data_dir(settings.data_dir, [])
    return mode


# ---- accounts -----------------------------------------------------------------------------


def home_of(data_dir: Path, hub_name: str) -> Path:
    if "/" in hub_name or hub_name in ("", ".", ".."):
        raise ValueError(f"{hub_name!r} cannot name a home directory")
    return Path(data_dir).absolute() / "home" / hub_name


def account_tag(settings: Any) -> str:
    """This platform's tag in its account names (``service.account_tag``, else derived from the
    data directory's real path: ``accounts.instance_tag``)."""
    from .accounts import instance_tag

    service = getattr(settings, "service", None)
    return getattr(service, "account_tag", "") or instance_tag(os.path.realpath(settings.data_dir))


def account_for(settings: Any, hub_name: str) -> dict[str, Any] | None:
    """Multi-user mode: ``{name, uid, gid, home}`` of ``hub_name``'s account, created on first use
    (blocking: ``useradd``; ``accounts.AccountClash`` when another platform's has its name);
    single-person: None. The service creates accounts; the hub only uses them."""
    if settings.backend != "local" or mode_of(settings) != "multi-user":
        return None
    from .accounts import ensure_account

    data_dir = Path(settings.data_dir).absolute()
    private_dir(data_dir / "home", 0o711)
    account = ensure_account(hub_name, home_of(data_dir, hub_name), data_dir / "secrets", account_tag(settings))
    return {"name": account.name, "uid": account.uid, "gid": account.gid, "home": account.home}
