"""Who listens on a local TCP port: the LISTEN rows of ``/proc/net/tcp`` and ``/proc/net/tcp6``.

The server's proxy (``<base_url>proxy/<port>/`` and every jupyter-server-proxy entry on a TCP
port) connects to ``localhost``; it may reach a listener on 127.0.0.0/8, ``::1`` or a wildcard
address (``0.0.0.0``, ``::``). :func:`owners` gives the uids of those listeners on a port, from
the kernel's tables (the ``uid`` column, the account that opened the socket), and
:func:`refusal` says, in a sentence, why a port is not this server's own (``None`` when it is).

:func:`read_listeners` asks the kernel over netlink (``NETLINK_SOCK_DIAG``, the interface of
``ss``: the same rows and uids as ``/proc/net/tcp{,6}``, 0.3 ms for both families where reading
the two files took 9 ms on the development VM), and reads the files where netlink is refused.
Parsing is pure (:func:`parse_table`, :func:`parse_diag`).
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass

LISTEN = "0A"
TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x301
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10
HEADER = struct.Struct("=IHHII")  # nlmsghdr


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


def diag_request(family: int) -> bytes:
    """A dump request for the TCP listeners of ``family`` (``inet_diag_req_v2``, pure)."""
    body = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN) + bytes(48)
    return HEADER.pack(HEADER.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST_DUMP, 1, 0) + body


def parse_diag(data: bytes) -> tuple[list[Listener], bool]:
    """The listeners in one netlink datagram (``inet_diag_msg`` records) and whether it ended the
    dump (pure). An error record raises OSError."""
    found: list[Listener] = []
    offset = 0
    while offset + HEADER.size <= len(data):
        length, kind, _flags, _seq, _pid = HEADER.unpack_from(data, offset)
        if kind == NLMSG_DONE:
            return found, True
        if kind == NLMSG_ERROR:
            code = -struct.unpack_from("=i", data, offset + HEADER.size)[0]
            raise OSError(code, "the kernel refused the socket dump")
        body = offset + HEADER.size
        family = data[body]
        sport = struct.unpack_from("!H", data, body + 4)[0]  # inet_diag_sockid, network order
        raw = data[body + 8 : body + 8 + (4 if family == socket.AF_INET else 16)]
        uid = struct.unpack_from("=I", data, body + 64)[0]  # after the sockid and three counters
        found.append(Listener(str(ipaddress.ip_address(raw)), sport, uid))
        offset += (length + 3) & ~3
        if length < HEADER.size:
            break
    return found, False


def read_diag(family: int) -> list[Listener]:
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(5)
        nl.send(diag_request(family))
        found: list[Listener] = []
        while True:
            more, done = parse_diag(nl.recv(1 << 16))
            found += more
            if done:
                return found


def read_listeners() -> list[Listener]:
    """Every TCP listener of this network namespace: over netlink, else from ``/proc``."""
    try:
        return read_diag(socket.AF_INET) + read_diag(socket.AF_INET6)
    except OSError:
        return read_tables()


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
