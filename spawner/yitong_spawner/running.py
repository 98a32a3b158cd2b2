"""Find the platform an admin's command is about: its data directory, settings file and hub.

`make run DATA_DIR=/srv/yitong` starts the hub with `YITONG_DATA_DIR` in its environment; a
later `.venv/bin/yitong-passwd ...` in another terminal does not have it. So the command looks
for hubs started from this checkout's `jupyterhub_config.py` (in `/proc`: their command line,
working directory and environment) and takes the data directory of the one it finds. The rule:

1. `$YITONG_DATA_DIR` when set;
2. else the data directory of the one hub running from this checkout;
3. else (none running) the checkout's `.yitong`, where `make run` without `DATA_DIR` keeps it;

several hubs from this checkout with different data directories are refused with their list, and so
is a hub of another account whose environment cannot be read (rather than guessing `.yitong`).
:func:`hubs_of` and :func:`choose` are pure (tested with literals); :func:`scan` reads `/proc`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


class Ambiguous(Exception):
    """Several platforms run from this checkout; the admin names one."""


@dataclass(frozen=True)
class Hub:
    pid: int
    data_dir: str
    settings: str


@dataclass(frozen=True)
class Process:
    pid: int
    argv: list[str]
    cwd: str
    env: Mapping[str, str] | None  # None: another account's, not ours to read


def _config_arg(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg in ("-f", "--config") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(("--config=", "-f=")):
            return arg.split("=", 1)[1]
    return None


def hub_of(process: Process, checkout: str) -> Hub | None:
    """The platform `process` runs, when it is a `jupyterhub -f <checkout>/jupyterhub_config.py`."""
    if not any(os.path.basename(arg) == "jupyterhub" for arg in process.argv[:2]):
        return None
    config = _config_arg(process.argv)
    if config is None:
        return None
    root = os.path.abspath(checkout)
    if process.env is None:  # another account's hub: its config path is known only when absolute
        return (
            Hub(process.pid, "", "") if os.path.normpath(config) == os.path.join(root, "jupyterhub_config.py") else None
        )
    if os.path.normpath(os.path.join(process.cwd, config)) != os.path.join(root, "jupyterhub_config.py"):
        return None
    # as jupyterhub_config.py reads them: relative to where the hub runs, defaults beside it
    data_dir = process.env.get("YITONG_DATA_DIR") or os.path.join(root, ".yitong")
    settings = process.env.get("YITONG_SETTINGS") or os.path.join(root, "yitong.example.yaml")
    return Hub(
        process.pid,
        os.path.normpath(os.path.join(process.cwd, data_dir)),
        os.path.normpath(os.path.join(process.cwd, settings)),
    )


def hubs_of(processes: Iterable[Process], checkout: str) -> list[Hub]:
    return [hub for process in processes if (hub := hub_of(process, checkout))]


def choose(env: Mapping[str, str], hubs: list[Hub], checkout: str) -> tuple[str, Hub | None]:
    """`(data dir, its running hub or None)` by the rule above; :class:`Ambiguous` when unsure."""
    if env.get("YITONG_DATA_DIR"):
        data_dir = os.path.abspath(env["YITONG_DATA_DIR"])
        return data_dir, next((h for h in hubs if h.data_dir == data_dir), None)
    if unreadable := [h.pid for h in hubs if not h.data_dir]:
        raise Ambiguous(
            f"a platform runs from this checkout as another account (pid {', '.join(map(str, unreadable))}): "
            "run this as that account, or name its data directory with YITONG_DATA_DIR=<data dir> before the command"
        )
    dirs = sorted({h.data_dir for h in hubs})
    if len(dirs) > 1:
        raise Ambiguous(
            f"{len(dirs)} platforms run from this checkout ({', '.join(dirs)}): name one with "
            "YITONG_DATA_DIR=<data dir> before the command"
        )
    if dirs:
        return dirs[0], next(h for h in hubs if h.data_dir == dirs[0])
    return os.path.join(os.path.abspath(checkout), ".yitong"), None


def scan(proc: str = "/proc") -> list[Process]:
    """Every process whose command line, working directory and environment this account may read."""
    out: list[Process] = []
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().decode(errors="replace").split("\0")
            if not any("jupyterhub" in arg for arg in argv[:2]):
                continue
        except OSError:  # gone
            continue
        try:
            raw = Path(entry.path, "environ").read_bytes().decode(errors="replace")
            cwd = os.readlink(os.path.join(entry.path, "cwd"))
        except PermissionError:  # another account's
            out.append(Process(int(entry.name), [a for a in argv if a], "", None))
            continue
        except OSError:  # gone
            continue
        env = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
        out.append(Process(int(entry.name), [a for a in argv if a], cwd, env))
    return out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pid_of(data_dir: str) -> int | None:
    """The hub running on `data_dir` by its pid file (`<data_dir>/jupyterhub.pid`), if alive."""
    try:
        pid = int(Path(data_dir, "jupyterhub.pid").read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def checkout_of(prefix: str | None = None) -> str | None:
    """The checkout whose `.venv` this runs from (the README's `.venv/bin/...`), if any."""
    import sys

    checkout = Path(prefix or sys.prefix).resolve().parent
    return str(checkout) if (checkout / "jupyterhub_config.py").is_file() else None


def find(env: Mapping[str, str] | None = None, checkout: str | None = None) -> tuple[str, Hub | None]:
    """The data directory this command is about, and the hub running on it (None: not running)."""
    env = os.environ if env is None else env
    checkout = checkout or checkout_of()
    if checkout is None:  # an installation outside a checkout: the variable, else ./.yitong
        data_dir = os.path.abspath(env.get("YITONG_DATA_DIR") or ".yitong")
        pid = pid_of(data_dir)
        settings = env.get("YITONG_SETTINGS") or ""
        return data_dir, Hub(pid, data_dir, settings) if pid else None
    data_dir, hub = choose(env, hubs_of(scan(), checkout), checkout)
    if hub is None and (pid := pid_of(data_dir)):
        # running, but its environment is not ours to read: the settings as `make run` names them
        settings = env.get("YITONG_SETTINGS") or os.path.join(checkout, "yitong.example.yaml")
        hub = Hub(pid, data_dir, settings)
    return data_dir, hub
