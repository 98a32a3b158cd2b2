"""Who listens on a TCP port and which processes hold it: the listening sockets of a network
namespace (core/listeners.py, the kernel's table) and the processes whose descriptors hold them
(``/proc/<pid>/fd`` links ``socket:[inode]``).

The service trusts a daemon's port only once the daemon it started holds the listening socket, so
another local process that binds the port first (or answers on it) is named, not talked to.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from ..core.listeners import Listener, listening, parse_table

__all__ = ["Listener", "held_by", "holders", "listening", "parse_table", "socket_inodes", "who"]


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets ``pid``'s descriptors hold (empty when it cannot be read)."""
    out: set[int] = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(int(target[8:-1]))
    return out


def held_by(pid: int, host: str, port: int) -> bool:
    """Whether ``pid`` holds a socket listening where ``host:port`` connects, and no other
    listener answers there."""
    found = listening(host, port, f"/proc/{pid}")
    return bool(found) and all(x.inode in socket_inodes(pid) for x in found)


def holders(inode: int) -> list[int]:
    """The processes whose descriptors hold socket ``inode`` (those this process may read)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and inode in socket_inodes(int(entry)):
            out.append(int(entry))
    return out


def _account(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def who(host: str, port: int) -> str:
    """Who listens where ``host:port`` connects, in words: "pid 4242 (python3) of account
    yt-alice (uid 1001)", or "" when no listener is seen."""
    found = listening(host, port)
    if not found:
        return ""
    parts = []
    for listener in found:
        pids = holders(listener.inode)
        procs = ", ".join(f"pid {pid} ({_command(pid)})" for pid in pids)
        parts.append(f"{procs} of account {_account(listener.uid)}" if procs else f"account {_account(listener.uid)}")
    return "; ".join(dict.fromkeys(parts))
