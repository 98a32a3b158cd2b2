"""Port forwarding through the SSH gateway: the proxy's boundary (yitong_lab's proxy_guard).

Local forwarding (``ssh -L 6006:localhost:6006``, VS Code Remote-SSH's tunnels; SSH's
``direct-tcpip``) is allowed only

- in multi-user mode (each person's workloads run as their own account), to
- ``localhost``, ``127.0.0.1`` or ``::1`` (no other host: the gateway is no way out of or into the
  network), on a port where
- every listener ``localhost`` reaches is the person's own account (core/listeners.py, the
  kernel's table: the account that opened the socket), and there is one.

Everything else is refused with a sentence the client prints ("open failed: administratively
prohibited: ..."): another account's port (another person's notebook, a replica, the platform's
own service, hub and monitoring, all root's or the service's), a port nothing listens on, any
other host, single-person mode (there one account runs everyone's workloads, so a port's owner
says nothing about whose it is). Remote forwarding (``ssh -R``, ``tcpip-forward``), forwarding to
unix sockets (``direct-streamlocal``) and agent/X11 forwarding are refused: the gateway binds
nothing for anyone.

The check is made as the channel opens, then the gateway connects (as root, from the service):
a listener that replaces the person's own between the two (milliseconds) is the one remaining
race, as for the server's proxy.
"""

from __future__ import annotations

from typing import Any

from ..core.listeners import foreign, read_listeners

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def refusal(host: str, port: int, uid: int | None, service_uid: int, table: Any) -> str | None:
    """Why ``host:port`` is not the person's to forward to (pure but for ``table``, called for the
    listener rows only when the host passes); None: it is. ``uid``: the person's account, None
    outside multi-user mode."""
    if uid is None:
        return (
            "port forwarding is offered in multi-user mode only (each person's workloads as their own "
            "account): here one account runs everyone's, so no port is yours alone"
        )
    if host.strip("[]").lower() not in LOCAL_HOSTS:
        return f"forwarding reaches only your own services on localhost, not {host[:80]!r}"
    if not 0 < port < 65536:
        return f"{port} is not a TCP port"
    if uid in (0, service_uid):
        return "your account is the platform's own here: nothing can be forwarded"
    found = foreign(port, uid, table())
    if found == "none":
        return f"nothing listens on localhost port {port}: start your service there first"
    if found == "other":
        return f"localhost port {port} is not yours: another account listens on it; SSH forwards only to services your own account started"
    return None


def person_uid(settings: Any, person: str) -> int | None:
    """The uid of ``person``'s account on this machine in multi-user mode (never created here),
    else None. Blocking (a passwd lookup)."""
    from ..core.accounts import account_name, lookup
    from ..core.confinement import account_tag, mode_of

    if settings.backend != "local" or mode_of(settings) != "multi-user":
        return None
    try:
        account = lookup(account_name(person, account_tag(settings)))
    except ValueError:
        return None
    return account.uid if account is not None else -1  # -1: no account yet, so no port of it


__all__ = ["LOCAL_HOSTS", "person_uid", "read_listeners", "refusal"]
