"""The server's proxy reaches only this server's own services.

jupyter-server-proxy forwards ``<base_url>proxy/<port>/``, ``proxy/absolute/<port>/``,
``proxy/<host>:<port>/`` and every named entry on a TCP port to a local port, with the request's
headers (the person's hub cookie among them). On a machine shared by several people that port
may be another person's service, or a listener someone bound to catch a victim's cookie. So
every proxy handler of the server (any subclass of jupyter-server-proxy's ``ProxyHandler``,
whoever registered it) is replaced, at the extension's load, by a guarded subclass
(:func:`guard_proxy_handlers`) that allows a TCP target only when:

- its host is ``localhost`` or ``127.0.0.1`` (other hosts: 403, whatever ``host_allowlist`` says);
- every listener ``localhost`` reaches on the port belongs to this server's uid
  (:mod:`yitong_lab.proxies.listeners`: the kernel's TCP tables, as ``/proc/net/tcp{,6}``
  show them, read over netlink); else 403 (another account's)
  or 502 (nothing listens), with a sentence.

Targets on a unix socket (``unix_socket``: code-server, TensorBoard, the per-job boards) are
protected by the socket's 0700 folder instead and pass. The URL forms are checked in
``prepare`` (before a websocket upgrade; the tables cost 0.3 ms); a named entry on a
TCP port, whose process starts on the first request, is checked when the proxy builds the
backend's URL (a raw-socket entry when it opens its stream).
"""

from __future__ import annotations

import os
from typing import Any

from jupyter_server_proxy.handlers import LocalProxyHandler, ProxyHandler, RemoteProxyHandler
from jupyter_server_proxy.rawsocket import RawSocketHandler
from tornado import web
from tornado.routing import Router

from yitong_lab.proxies import listeners

LOCAL_HOSTS = ("localhost", "127.0.0.1")


def target_refusal(host: str, port: int, uid: int, rows: list[listeners.Listener]) -> tuple[int, str] | None:
    """Why ``host:port`` is not this server's to proxy to (pure; ``None``: it is)."""
    if host not in LOCAL_HOSTS:
        return 403, f"{host!r} is not this machine's loopback: a server proxies only to its own services on localhost"
    return listeners.refusal(port, uid, rows)


class OwnServicesOnly(ProxyHandler):
    """Mixed in before a jupyter-server-proxy handler class (see module doc)."""

    _yt_checked: tuple[str, int] | None = None
    _yt_url_form: type | None = None  # LocalProxyHandler or RemoteProxyHandler itself, guarded

    def _yt_url_target(self) -> tuple[str, int] | None:
        """``(host, port)`` of jupyter-server-proxy's URL forms, from the route's groups (their
        subclasses may read their groups otherwise: checked when they connect)."""
        args = self.path_args
        if self._yt_url_form is RemoteProxyHandler:
            return args[0], int(args[1])
        if self._yt_url_form is LocalProxyHandler:
            return "localhost", int(args[0])
        return None

    def _yt_refuse(self, host: str, port: int, rows: list[listeners.Listener]) -> None:
        refused = target_refusal(host, port, os.geteuid(), rows)
        if refused is not None:
            raise web.HTTPError(refused[0], "%s", refused[1])

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        await super().prepare(*args, **kwargs)  # the login first
        target = self._yt_url_target()
        if target is not None and self.unix_socket is None:
            self._yt_refuse(*target, listeners.read_listeners())
            self._yt_checked = target

    def get_client_uri(self, protocol: str, host: str, port: Any, proxied_path: str) -> str:
        if self.unix_socket is None and self._yt_checked != (host, int(port)):
            self._yt_refuse(host, int(port), listeners.read_listeners())
        return super().get_client_uri(protocol, host, port, proxied_path)

    async def proxy_open(self, host: str, port: Any, proxied_path: str = "") -> None:
        if isinstance(self, RawSocketHandler) and self.unix_socket is None:  # connects without a URL
            self._yt_refuse("localhost", int(self.port), listeners.read_listeners())
        await super().proxy_open(host, port, proxied_path)


_GUARDED: dict[type, type] = {}


def guarded(cls: type) -> type:
    """``cls`` with :class:`OwnServicesOnly` in front (one subclass per class)."""
    if issubclass(cls, OwnServicesOnly):
        return cls
    if cls not in _GUARDED:
        url_form = cls if cls in (LocalProxyHandler, RemoteProxyHandler) else None
        _GUARDED[cls] = type(
            cls.__name__, (OwnServicesOnly, cls), {"__module__": cls.__module__, "_yt_url_form": url_form}
        )
    return _GUARDED[cls]


def guard_proxy_handlers(router: Router) -> int:
    """Replace every ProxyHandler class in ``router``'s rules (recursively) by its guarded
    subclass; returns how many rules point at a guarded class now."""
    count = 0
    for rule in getattr(router, "rules", []):
        target = rule.target
        if isinstance(target, Router):
            count += guard_proxy_handlers(target)
        elif isinstance(target, type) and issubclass(target, ProxyHandler):
            rule.target = guarded(target)
            if hasattr(rule, "handler_class"):
                rule.handler_class = rule.target
            count += 1
    return count
