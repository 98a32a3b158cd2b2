"""Who listens on a TCP port, from ``/proc`` (Linux): the listening sockets of a network namespace
(``/proc/<pid>/net/tcp``, ``tcp6``) and the processes whose descriptors hold them
(``/proc/<pid>/fd`` links ``socket:[inode]``).

The service trusts a daemon's port only once the daemon it started holds the listening socket, so
another local process that binds the port first (or answers on it) is named, not talked to.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import struct
from dataclasses import dataclass
from pathlib import Path

LISTEN = "0A"  # the kernel's TCP_LISTEN, as /proc/net/tcp prints it


@dataclass(frozen=True)
class Listener:
    address: str  # as ipaddress writes it: 127.0.0.1, ::
    port: int
    uid: int
    inode: int


def _address(hex_text: str) -> str:
    """An address of /proc/net/tcp{,6}: 32-bit words in host order, printed as %08X each."""
    raw = b"".join(struct.pack("=I", int(hex_text[i : i + 8], 16)) for i in range(0, len(hex_text), 8))
    return str(ipaddress.ip_address(raw))


def parse(text: str) -> list[Listener]:
    """The listening sockets of a ``/proc/<pid>/net/tcp`` or ``tcp6`` text."""
    out = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        address, _, port = fields[1].partition(":")
        try:
            out.append(Listener(_address(address), int(port, 16), int(fields[7]), int(fields[9])))
        except ValueError:
            continue
    return out


def _matches(listener: Listener, host: str, port: int) -> bool:
    """Whether a connection to ``host:port`` would reach ``listener`` (its address or a wildcard)."""
    if listener.port != port:
        return False
    try:
        wanted = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return True  # a host name: any listener on the port may be the one
    got = ipaddress.ip_address(listener.address)
    if got.is_unspecified:
        return True
    if isinstance(got, ipaddress.IPv6Address) and got.ipv4_mapped is not None:
        got = got.ipv4_mapped
    return got == wanted


def listening(host: str, port: int, proc: str = "/proc/self") -> list[Listener]:
    """The sockets listening where ``host:port`` connects, in the network namespace of ``proc``."""
    found = []
    for name in ("tcp", "tcp6"):
        try:
            text = Path(proc, "net", name).read_text()
        except OSError:
            continue
        found += [x for x in parse(text) if _matches(x, host, port)]
    return found


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
