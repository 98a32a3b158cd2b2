"""Who listens on a local TCP port: the kernel's table of listening sockets (Linux), the one
reader of the service's boundary checks.

- :func:`read_listeners`: every TCP listener of this process's network namespace, over netlink
  (``NETLINK_SOCK_DIAG``, the interface of ``ss``: 0.3 ms for both families where reading
  ``/proc/net/tcp{,6}`` took 9 ms on the development VM), from the files where netlink is refused;
- :func:`listening`: the listeners where ``host:port`` connects, in the network namespace of
  ``/proc/<pid>`` (a daemon's; the files, which netlink cannot address);
- :func:`owners` / :func:`foreign`: the accounts behind a port ``localhost`` reaches, and whether
  it is one account's own (the SSH gateway's port forwarding, ssh/forwarding.py).

Who uses it: alerts/listeners.py (a monitoring daemon's port is trusted only once the daemon holds
it) and ssh/forwarding.py. The Jupyter server extension keeps a stdlib twin of the table reader,
``yitong_lab.proxies.listeners`` (its proxy guard): yitong_lab is installed in notebook images
without this package and does not depend on it; tests/services/core/test_listeners.py holds the two
to the same rows. Parsing is pure (:func:`parse_table`, :func:`parse_diag`).
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

LISTEN = "0A"  # the kernel's TCP_LISTEN, as /proc/net/tcp prints it
TABLES = ("tcp", "tcp6")
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x301
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10
HEADER = struct.Struct("=IHHII")  # nlmsghdr


@dataclass(frozen=True)
class Listener:
    address: str  # as ipaddress writes it: 127.0.0.1, ::
    port: int
    uid: int  # the account that opened the socket
    inode: int = 0


def _address(hex_text: str) -> str:
    """An address of /proc/net/tcp{,6}: 32-bit words in host order, printed as %08X each."""
    raw = b"".join(struct.pack("=I", int(hex_text[i : i + 8], 16)) for i in range(0, len(hex_text), 8))
    return str(ipaddress.ip_address(raw))


def parse_table(text: str) -> list[Listener]:
    """The LISTEN rows of one ``/proc/<pid>/net/tcp`` or ``tcp6`` text (pure)."""
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


def read_tables(proc: str = "/proc/self") -> list[Listener]:
    """The LISTEN rows of the network namespace of ``proc`` (a table the kernel lacks, e.g. no
    IPv6, is skipped)."""
    found: list[Listener] = []
    for name in TABLES:
        try:
            found += parse_table(Path(proc, "net", name).read_text(encoding="ascii", errors="replace"))
        except OSError:
            continue
    return found


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
        uid, inode = struct.unpack_from("=II", data, body + 64)  # after the sockid and three counters
        found.append(Listener(str(ipaddress.ip_address(raw)), sport, uid, inode))
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
    """Every TCP listener of this network namespace: over netlink, else from ``/proc``. Blocking
    (well under a millisecond)."""
    try:
        return read_diag(socket.AF_INET) + read_diag(socket.AF_INET6)
    except OSError:
        return read_tables()


def reaches(listener: Listener, host: str, port: int) -> bool:
    """Whether a connection to ``host:port`` would reach ``listener`` (its address or a wildcard;
    a host name: any listener on the port may be the one)."""
    if listener.port != port:
        return False
    try:
        wanted = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return True
    got = ipaddress.ip_address(listener.address)
    if got.is_unspecified:
        return True
    if isinstance(got, ipaddress.IPv6Address) and got.ipv4_mapped is not None:
        got = got.ipv4_mapped
    return got == wanted


def listening(host: str, port: int, proc: str = "/proc/self") -> list[Listener]:
    """The sockets listening where ``host:port`` connects, in the network namespace of ``proc``."""
    return [x for x in read_tables(proc) if reaches(x, host, port)]


def reached_from_localhost(address: str) -> bool:
    """Whether a connection to ``localhost``/``127.0.0.1`` on the port may land on this listener."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def owners(port: int, listeners: Iterable[Listener]) -> set[int]:
    """The uids listening on ``port`` where ``localhost`` reaches (pure)."""
    return {each.uid for each in listeners if each.port == port and reached_from_localhost(each.address)}


def foreign(port: int, uid: int, listeners: Iterable[Listener]) -> str | None:
    """None when every listener ``localhost`` reaches on ``port`` is ``uid``'s (and there is one);
    else ``"none"`` (nothing listens) or ``"other"`` (another account does, perhaps beside ``uid``)."""
    found = owners(port, listeners)
    if not found:
        return "none"
    return None if found == {uid} else "other"
