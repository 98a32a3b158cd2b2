"""``code-server`` (VS Code in the browser) behind ``<base_url>code-server/``.

code-server serves relative URLs, so the default path rewriting to ``/`` works
(no ``absolute_url``). Settings: ``YITONG_CODE_SERVER_WORKDIR`` (default: home),
``YITONG_CODE_SERVER_PREFIX`` (default: ``<checkout>/.tools/code-server``).

Where it comes from: ``<checkout>/.tools/code-server`` (``make code-server``, which ``make run``
starts in the background: scripts/install-code-server.sh), else ``code-server`` on PATH (the
images). The proxy's command is always :mod:`yitong_lab.proxies.code_server_launch` on this
Python, never the binary itself: it execs code-server when it is there and otherwise serves a
small page saying how far its install is (or that it is not installed), so opening
``<base_url>code-server/`` is never a 500 from a missing program. Both listen on the same unix
socket in the server's private folder (``yitong_lab.proxies.private_dir``), never on a port.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yitong_lab.proxies import ICONS, escape_template, socket_path

NAME = "code-server"
# <checkout>/.tools/code-server (this package lives in <checkout>/extensions/yitong_lab)
PREFIX = Path(__file__).resolve().parents[3] / ".tools" / NAME
# the install's stage at its largest (code-server 4.139.1 + Node 24.21.0 with its headers, 770 MiB
# once installed, + npm's cache), for the percentage; it stays there while native modules build
INSTALLED_BYTES = 1000 * 2**20


@dataclass(frozen=True)
class InstallState:
    """``state``: installed | installing | failed | absent; ``percent`` while installing;
    ``detail``: why it failed, ``log``: where its output is."""

    state: str
    executable: str | None = None
    percent: int = 0
    detail: str = ""
    log: str = ""


def read_failed(text: str) -> tuple[str, str]:
    """``(why, log)`` from ``<prefix>.failed`` (its first line, and its ``log: PATH`` line) (pure)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    log = next((line.removeprefix("log: ") for line in lines if line.startswith("log: ")), "")
    why = next((line for line in lines if not line.startswith("log: ")), "")
    return why[:500], log


def code_server_command(executable: str, workdir: str, socket: str) -> list[str]:
    """code-server on a unix socket only its account can open (``--socket-mode 600``, in the
    server's 0700 folder): ``--auth none`` is safe because only the server's proxy, behind the
    hub's login, connects. ``--disable-proxy``: code-server's own ``proxy/<port>/`` routes would
    forward the person's cookies to any local port, around the server's check of its ports."""
    return [
        executable,
        "--auth",
        "none",
        "--socket",
        socket,
        "--socket-mode",
        "600",
        "--disable-proxy",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",  # the person's own home: no "trust the authors?" dialog
        workdir,
    ]


def launch_command(workdir: str, prefix: Path, python: str = sys.executable) -> list[str]:
    """The proxy's command: the launcher on this Python (``{unix_socket}`` filled by the proxy)."""
    return [
        python,
        "-m",
        "yitong_lab.proxies.code_server_launch",
        "--socket",
        "{unix_socket}",
        "--prefix",
        escape_template(str(prefix)),
        escape_template(workdir),
    ]


def configured_prefix() -> Path:
    return Path(os.environ.get("YITONG_CODE_SERVER_PREFIX") or PREFIX)


def tree_bytes(path: Path) -> int:
    total = 0
    for parent, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except OSError:
                pass
    return total


def install_running(prefix: Path) -> bool:
    """Whether scripts/install-code-server.sh holds ``<prefix>.lock`` now."""
    try:
        fd = os.open(f"{prefix}.lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def install_state(prefix: Path, on_path: str | None = None) -> InstallState:
    """Where code-server is, or how far its install under ``prefix`` is."""
    binary = prefix / "bin" / NAME
    if os.access(binary, os.X_OK):
        return InstallState("installed", str(binary))
    found = on_path if on_path is not None else shutil.which(NAME)
    if found:
        return InstallState("installed", found)
    partial = Path(f"{prefix}.partial")
    if install_running(prefix):
        percent = min(99, 100 * tree_bytes(partial) // INSTALLED_BYTES) if partial.is_dir() else 0
        return InstallState("installing", percent=percent)
    failed = Path(f"{prefix}.failed")
    if failed.is_file():
        why, log = read_failed(failed.read_text(errors="replace"))
        return InstallState("failed", detail=why, log=log)
    return InstallState("absent")


def launcher_title(state: InstallState) -> str:
    """Always "VS Code": jupyter-server-proxy reads the card once, when the server starts, so a
    figure in it would go stale (an "installing, 99%" long after the install ended or failed);
    the page behind the card (code_server_launch) follows the install as it goes."""
    return "VS Code"


def setup_code_server() -> dict[str, Any]:
    prefix = configured_prefix()
    state = install_state(prefix)
    workdir = os.environ.get("YITONG_CODE_SERVER_WORKDIR") or os.path.expanduser("~")
    return {
        "command": launch_command(workdir, prefix),
        "unix_socket": socket_path(NAME),
        "timeout": 30,
        "new_browser_tab": True,
        "launcher_entry": {
            # a failed install keeps the card: its page says why and where the log is
            "enabled": state.state in ("installed", "installing", "failed"),
            "title": launcher_title(state),
            "icon_path": str(ICONS / "code-server.svg"),
            "category": "Other",
        },
    }
