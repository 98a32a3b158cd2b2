"""The service's listener table (core/listeners.py) against the kernel, and against the Jupyter
server extension's stdlib twin (yitong_lab.proxies.listeners, which cannot import this package):
the same rows, the same owners, the same answer to "is this port one account's own"."""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest

from yitong_lab.proxies import listeners as twin
from yitong_services.core import listeners

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 11 1 0 100 0 0 10 0
   1: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 12 1 0 100 0 0 10 0
   2: 0100007F:1F92 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1003        0 13 1 0 100 0 0 10 0
   3: 0501A8C0:1F93 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1004        0 14 1 0 100 0 0 10 0
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1005        0 16 1 0 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:1F96 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 18 1 0 100 0 0 10 0
"""


def _plain(rows):
    return [(r.address, r.port, r.uid) for r in rows]


def test_the_tables_parse_alike():
    ours = listeners.parse_table(TCP) + listeners.parse_table(TCP6)
    assert ours == [
        listeners.Listener("127.0.0.1", 8080, 1001, 11),
        listeners.Listener("0.0.0.0", 8081, 1002, 12),  # row 2 is a connection, not a listener
        listeners.Listener("192.168.1.5", 8083, 1004, 14),
        listeners.Listener("::1", 8080, 1005, 16),
        listeners.Listener(str(ipaddress.ip_address("::ffff:127.0.0.1")), 8086, 1001, 18),
    ]
    assert _plain(ours) == _plain(twin.parse_table(TCP) + twin.parse_table(TCP6))


@pytest.mark.parametrize(
    ("port", "uid", "expected", "status"),
    [
        (8080, 1001, "other", 403),  # 1005 listens on ::1 too
        (8081, 1002, None, None),  # a wildcard listener of 1002's own
        (8081, 1001, "other", 403),
        (8083, 1004, "none", 502),  # 192.168.1.5: not where localhost connects
        (8086, 1001, None, None),  # v4-mapped loopback
        (9999, 1001, "none", 502),
    ],
)
def test_own_port_answers_alike(port, uid, expected, status):
    ours = listeners.parse_table(TCP) + listeners.parse_table(TCP6)
    assert listeners.foreign(port, uid, ours) == expected
    refused = twin.refusal(port, uid, twin.parse_table(TCP) + twin.parse_table(TCP6))
    assert (refused[0] if refused else None) == status


def test_netlink_and_proc_agree_on_real_listeners():
    with socket.socket() as v4, socket.socket(socket.AF_INET6) as v6, socket.socket() as connected:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.bind(("::1", 0))
        v6.listen()
        connected.connect(v4.getsockname())  # a connection on the same port is not a listener
        mine = {
            listeners.Listener("127.0.0.1", v4.getsockname()[1], os.geteuid(), os.fstat(v4.fileno()).st_ino),
            listeners.Listener("::1", v6.getsockname()[1], os.geteuid(), os.fstat(v6.fileno()).st_ino),
        }
        over_netlink = listeners.read_diag(socket.AF_INET) + listeners.read_diag(socket.AF_INET6)
        from_proc = listeners.read_tables()
        assert mine <= set(over_netlink) and mine <= set(from_proc)
        assert sorted(over_netlink, key=str) == sorted(from_proc, key=str)
        assert sorted(_plain(over_netlink)) == sorted(_plain(twin.read_listeners()))
        assert [x.inode for x in listeners.listening("127.0.0.1", v4.getsockname()[1])] == [
            os.fstat(v4.fileno()).st_ino
        ]
        assert listeners.foreign(v6.getsockname()[1], os.geteuid(), listeners.read_listeners()) is None
