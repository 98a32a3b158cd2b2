"""A small pooled HTTP/1.1 keep-alive client for servers on this machine (an endpoint's MLServer
replicas on 127.0.0.1), for the pass-through's hot path where httpx's generality (its pool,
anyio streams, tracing, per-request imports) costs more CPU than the model's answer.

``LoopbackPool.request(host, port, method, target, body, headers)`` returns a :class:`Reply`
(status, lower-cased headers, the whole body: ``Content-Length`` or chunked, parsed by
httptools, uvicorn's C parser). ``host`` may be a unix socket's path (``/...``; ``port`` 0) and
``peer_uid`` the account that must hold it: each new connection's peer (``SO_PEERCRED``: the
process that listens) is checked, and one of another account is closed before any byte is sent
(:class:`WrongPeer`). Connections are kept per ``(host, port)`` and reused; a pooled
connection the peer closed meanwhile (its keep-alive timeout) is dropped, and a request that
meets such a close before any byte of the answer is sent once more on a fresh connection.
Failures raise :class:`LoopbackError`: :class:`Refused` when nothing listens (the caller may
try another replica), a timeout or a broken answer otherwise. No redirects, no decompression
(nothing asks for it), no TLS: loopback only.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections import deque
from dataclasses import dataclass, field

import httptools

_ILLEGAL = (" ", "\r", "\n", "\0")


class LoopbackError(Exception):
    """The server did not answer (the sentence says how)."""


class Refused(LoopbackError):
    """Nothing accepted the connection (a stopped server)."""


class WrongPeer(LoopbackError):
    """The socket is held by another account's process than the one expected (never sent to)."""


def peer_of(sock: socket.socket) -> tuple[int, int, int]:
    """``(pid, uid, gid)`` of the process at the other end of a unix socket (``SO_PEERCRED``)."""
    pid, uid, gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid, uid, gid


def _where(key: tuple[str, int]) -> str:
    return key[0] if key[0].startswith("/") else f"{key[0]}:{key[1]}"


@dataclass
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class _Connection(asyncio.Protocol):
    """One keep-alive connection: at most one request in flight."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.parser = httptools.HttpResponseParser(self)
        self.answer: asyncio.Future[Reply] | None = None
        self.started = False  # a byte of the current answer arrived
        self.reply = Reply(0)
        self.chunks: list[bytes] = []
        self.reusable = False

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.started = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as e:
            self._fail(LoopbackError(f"a malformed HTTP answer: {e}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.answer is not None and not self.answer.done():
            if self.reply.status and "content-length" not in self.reply.headers and not self._chunked():
                self._complete()  # an answer delimited by the close
            else:
                self._fail(ConnectionResetError("the connection closed before the answer was complete"))

    # -- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = self.reply.headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        self.reply.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.reusable = self.parser.should_keep_alive()
        self._complete()

    # -- use
    def _chunked(self) -> bool:
        return "chunked" in self.reply.headers.get("transfer-encoding", "").lower()

    def _complete(self) -> None:
        self.reply.body = b"".join(self.chunks)
        if self.answer is not None and not self.answer.done():
            self.answer.set_result(self.reply)

    def _fail(self, exc: Exception) -> None:
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(exc)

    def send(self, data: bytes) -> asyncio.Future[Reply]:
        assert self.transport is not None
        self.answer = asyncio.get_running_loop().create_future()
        self.started, self.reply, self.chunks, self.reusable = False, Reply(0), [], False
        self.transport.write(data)
        return self.answer

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class LoopbackPool:
    """Keep-alive connections per ``(host, port)``; ``timeout`` bounds each attempt (connect,
    send, the whole answer), ``max_idle`` the idle connections kept per server, and
    ``max_connections`` the requests in flight at once (more wait their turn, within
    ``timeout``)."""

    def __init__(self, timeout: float = 60.0, max_idle: int = 64, max_connections: int = 256) -> None:
        self.timeout = timeout
        self.max_idle = max_idle
        self.max_connections = max_connections
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, int], deque[_Connection]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    async def request(
        self,
        host: str,
        port: int,
        method: str,
        target: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        peer_uid: int | None = None,
    ) -> Reply:
        """``method target`` on ``host:port``, or on the unix socket ``host`` held by ``peer_uid``
        (target: path and query, already percent-encoded)."""
        if method == "HEAD":
            raise ValueError("HEAD is not supported")  # its answer's length is no body's
        unix = host.startswith("/")
        if unix:  # keyed by the uid it must have: a socket is never reused for another expected owner
            port = -1 if peer_uid is None else peer_uid
        authority = "localhost" if unix else f"{host}:{port}"
        head = [f"{method} {target} HTTP/1.1", f"Host: {authority}", f"Content-Length: {len(body)}"]
        for name, value in (headers or {}).items():
            head.append(f"{name}: {value}")
        if any(c in target for c in _ILLEGAL) or any(c in line for line in head[3:] for c in "\r\n\0"):
            raise ValueError("a control character or space in the request line or a header")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # connections of an event loop that is gone are of no use
            self._loop, self._idle, self._slots = loop, {}, asyncio.Semaphore(self.max_connections)
        if self._slots.locked():
            try:
                async with asyncio.timeout(self.timeout):
                    await self._slots.acquire()
            except TimeoutError:
                raise LoopbackError(
                    f"no connection to {_where((host, port))} was free within {self.timeout:g} s"
                ) from None
        else:
            await self._slots.acquire()
        try:
            return await self._request((host, port), data)
        finally:
            self._slots.release()

    async def _request(self, key: tuple[str, int], data: bytes) -> Reply:
        where = _where(key)
        conn = self._take(key)
        if conn is not None:
            try:
                return await self._attempt(key, conn, data)
            except ConnectionError:
                if conn.started:
                    raise LoopbackError(f"{where} closed the connection in the middle of an answer") from None
                # a pooled connection the peer closed meanwhile (its keep-alive timeout): once more, fresh
        try:
            return await self._attempt(key, None, data)
        except ConnectionError as e:
            raise LoopbackError(f"{where} closed the connection: {e}") from None

    def _take(self, key: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()  # the most recently used: the least likely to have timed out
            if not conn.closed:
                return conn
        return None

    async def _attempt(self, key: tuple[str, int], conn: _Connection | None, data: bytes) -> Reply:
        """One try; ConnectionError when the connection breaks (``request`` decides on a retry)."""
        try:
            async with asyncio.timeout(self.timeout):
                if conn is None:
                    conn = await self._connect(key)
                reply = await conn.send(data)
        except TimeoutError:
            if conn is not None:
                conn.close()
            raise LoopbackError(f"{_where(key)} did not answer within {self.timeout:g} s") from None
        except BaseException:  # broken, cancelled (the caller went away): never reused
            if conn is not None:
                conn.close()
            raise
        self._release(key, conn)
        return reply

    @staticmethod
    async def _connect(key: tuple[str, int]) -> _Connection:
        if key[0].startswith("/"):
            return await _connect_unix(key[0], None if key[1] < 0 else key[1])
        try:
            _, conn = await asyncio.get_running_loop().create_connection(_Connection, *key)
        except ConnectionRefusedError:
            raise Refused(f"nothing listens on {key[0]}:{key[1]}") from None
        except OSError as e:
            raise LoopbackError(f"cannot connect to {key[0]}:{key[1]}: {e}") from None
        return conn

    def _release(self, key: tuple[str, int], conn: _Connection) -> None:
        if not conn.reusable or conn.closed:
            conn.close()
            return
        idle = self._idle.setdefault(key, deque())
        if len(idle) >= self.max_idle:
            conn.close()
        else:
            idle.append(conn)

    def close(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            while idle:
                idle.pop().close()
        self._idle.clear()


async def _connect_unix(path: str, uid: int | None) -> _Connection:
    """A connection to the unix socket ``path`` whose listener runs as ``uid`` (any when None).
    A path over AF_UNIX's 108 bytes is reached through its folder's descriptor."""
    folder, name = os.path.split(path)
    fd = -1
    try:
        if len(path.encode()) > 100:
            fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
        target = f"/proc/self/fd/{fd}/{name}" if fd >= 0 else path
        transport, conn = await asyncio.get_running_loop().create_unix_connection(_Connection, target)
    except (ConnectionRefusedError, FileNotFoundError):
        raise Refused(f"nothing listens on {path}") from None
    except OSError as e:
        raise LoopbackError(f"cannot connect to {path}: {e}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if uid is not None:
        pid, held_by, _gid = peer_of(transport.get_extra_info("socket"))
        if held_by != uid:
            transport.close()
            raise WrongPeer(f"{path} is held by another account's process (uid {held_by}, pid {pid}), not uid {uid}")
    return conn
