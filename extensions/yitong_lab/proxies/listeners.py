"""Who listens on a local TCP port: the LISTEN rows of ``/proc/net/tcp`` and ``/proc/net/tcp6``.

The server's proxy (``<base_url>proxy/<port>/`` and every jupyter-server-proxy entry on a TCP
port) connects to ``localhost``; it may reach a listener on 127.0.0.0/8, ``::1`` or a wildcard
address (``0.0.0.0``, ``::``). :func:`owners` gives the uids of those listeners on a port, from
the kernel's tables (the ``uid`` column, the account that opened the socket), and
:func:`refusal` says, in a sentence, why a port is not this server's own (``None`` when it is).
Parsing is pure (:func:`parse_table`); :func:`read_tables` is the only I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

LISTEN = "0A"
TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


@dataclass(frozen=True)
class Listener:
    address: str
    port: int
    uid: int


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The kernel prints each 32-bit word of the address in host (little-endian) byte order."""
    raw = bytes.fromhex(hex_address)
    return ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))


def parse_table(text: str) -> list[Listener]:
    """The LISTEN rows of one ``/proc/net/tcp{,6}`` table (pure)."""
    found = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8 or fields[3] != LISTEN:
            continue
        address, _, port = fields[1].partition(":")
        try:
            found.append(Listener(str(_address(address)), int(port, 16), int(fields[7])))
        except ValueError:
            continue
    return found


def reached_from_localhost(address: str) -> bool:
    """Whether a connection to ``localhost``/``127.0.0.1`` on the port may land on this listener."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def owners(port: int, listeners: Iterable[Listener]) -> set[int]:
    """The uids listening on ``port`` where ``localhost`` reaches (pure)."""
    return {each.uid for each in listeners if each.port == port and reached_from_localhost(each.address)}


def refusal(port: int, uid: int, listeners: Iterable[Listener]) -> tuple[int, str] | None:
    """``None`` when every listener ``localhost`` reaches on ``port`` is ``uid``'s (and there is
    one); else ``(status, sentence)``: 403 another account listens there, 502 nothing does."""
    found = owners(port, listeners)
    if not found:
        return 502, f"nothing listens on localhost port {port}: there is no service of this server to proxy to"
    if found != {uid}:
        return 403, (
            f"port {port} on localhost is not this server's: it is listened on by another account; "
            "a server proxies only to services it started itself"
        )
    return None


def read_tables(paths: Iterable[str] = TABLES) -> list[Listener]:
    """The LISTEN rows of this network namespace (a table the kernel lacks, e.g. no IPv6, is skipped)."""
    found: list[Listener] = []
    for path in paths:
        try:
            with open(path, encoding="ascii", errors="replace") as table:
                found += parse_table(table.read())
        except OSError:
            continue
    return found
