"""The loopback HTTP/1.1 client (core/loopback_http.py) against real servers started here: a real
uvicorn serving a small ASGI app (its own keep-alive timeout closes idle connections), and plain
asyncio servers that answer with bytes written by hand (chunked, delimited by the close, a close
in the middle, silence), since no ordinary server can be told to misbehave."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import uvicorn
from helpers import free_port

from yitong_services.core.loopback_http import LoopbackError, LoopbackPool, Refused


async def echo_app(scope, receive, send) -> None:
    """ASGI: the method, path, query, two headers and the body, echoed back as the body."""
    assert scope["type"] == "http"
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = dict(scope["headers"])
    said = b"|".join(
        [
            scope["method"].encode(),
            scope["raw_path"],
            scope["query_string"],
            headers.get(b"content-type", b"-"),
            headers.get(b"inference-header-content-length", b"-"),
            body,
        ]
    )
    if scope["path"] == "/chunked":  # no Content-Length: uvicorn sends it chunked
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-kind", b"chunked")]})
        for part in (b"one-", b"two-", b"three"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    status = 404 if scope["path"] == "/missing" else 200
    head = [(b"content-type", b"text/plain"), (b"content-length", str(len(said)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": said})


@contextlib.asynccontextmanager
async def uvicorn_server(keep_alive: float = 5) -> AsyncIterator[int]:
    port = free_port()
    config = uvicorn.Config(echo_app, host="127.0.0.1", port=port, log_level="warning", timeout_keep_alive=keep_alive)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await task


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[tuple[int, list[int]]]:
    """A plain asyncio server; yields its port and the list of connections it accepted."""
    accepted: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], accepted
    finally:
        server.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    return head + await reader.readexactly(length)


async def test_content_length_answers_reuse_one_connection():
    pool = LoopbackPool(timeout=5)
    async with uvicorn_server() as port:
        for i in range(3):
            r = await pool.request(
                "127.0.0.1",
                port,
                "POST",
                f"/v2/models/m/infer?n={i}",
                b'{"inputs": []}',
                {"Content-Type": "application/json", "Inference-Header-Content-Length": "14"},
            )
            assert r.status == 200
            assert r.headers["content-type"] == "text/plain"
            assert r.body == f'POST|/v2/models/m/infer|n={i}|application/json|14|{{"inputs": []}}'.encode()
        assert len(pool._idle[("127.0.0.1", port)]) == 1  # one connection, reused
        r = await pool.request("127.0.0.1", port, "GET", "/missing")
        assert (r.status, r.body) == (404, b"GET|/missing||-|-|")
        pool.close()


async def test_chunked_answer():
    pool = LoopbackPool(timeout=5)
    async with uvicorn_server() as port:
        r = await pool.request("127.0.0.1", port, "GET", "/chunked")
        assert (r.status, r.body, r.headers["x-kind"]) == (200, b"one-two-three", "chunked")
        r = await pool.request("127.0.0.1", port, "GET", "/again")  # the same connection, after a chunked answer
        assert r.body == b"GET|/again||-|-|"
        assert len(pool._idle[("127.0.0.1", port)]) == 1
        pool.close()


async def test_a_connection_the_server_closed_while_idle_is_replaced():
    """uvicorn closes a keep-alive connection idle for ``timeout_keep_alive``: the next request
    goes out on a fresh one and is answered."""
    pool = LoopbackPool(timeout=5)
    async with uvicorn_server(keep_alive=0.2) as port:
        assert (await pool.request("127.0.0.1", port, "GET", "/a")).status == 200
        [conn] = pool._idle[("127.0.0.1", port)]
        await asyncio.sleep(0.6)
        assert conn.closed  # the server closed it
        assert (await pool.request("127.0.0.1", port, "GET", "/b")).body == b"GET|/b||-|-|"
        pool.close()


async def test_a_stale_connection_met_in_flight_is_retried_once_on_a_fresh_one():
    """The server reads the request, then closes without a byte (as when its keep-alive timeout
    and our request cross): the pool sends it again once, on a new connection."""
    requests: list[bytes] = []

    async def handler(reader, writer) -> None:
        requests.append(await read_request(reader))
        if len(requests) == 1:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            requests.append(await read_request(reader))  # the second request, on the kept connection
            return  # closed without answering it
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
        await writer.drain()

    pool = LoopbackPool(timeout=5)
    async with raw_server(handler) as (port, accepted):
        assert (await pool.request("127.0.0.1", port, "POST", "/x", b"1")).body == b"ok"
        assert (await pool.request("127.0.0.1", port, "POST", "/x", b"2")).body == b"fresh"
        assert len(accepted) == 2 and len(requests) == 3
        assert requests[1].endswith(b"\r\n\r\n2") and requests[2].endswith(b"\r\n\r\n2")


async def test_a_close_in_the_middle_of_an_answer_is_an_error_not_a_retry():
    async def handler(reader, writer) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        await writer.drain()

    pool = LoopbackPool(timeout=5)
    async with raw_server(handler) as (port, accepted):
        with pytest.raises(LoopbackError, match="closed the connection"):
            await pool.request("127.0.0.1", port, "GET", "/x")
        assert len(accepted) == 1


async def test_an_answer_delimited_by_the_close():
    async def handler(reader, writer) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")
        await writer.drain()

    pool = LoopbackPool(timeout=5)
    async with raw_server(handler) as (port, _):
        r = await pool.request("127.0.0.1", port, "GET", "/x")
        assert (r.status, r.body) == (200, b"until the end")
        assert not pool._idle.get(("127.0.0.1", port))  # not kept


async def test_connection_close_is_not_kept():
    async def handler(reader, writer) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 4\r\n\r\nbusy")
        await writer.drain()

    pool = LoopbackPool(timeout=5)
    async with raw_server(handler) as (port, _):
        r = await pool.request("127.0.0.1", port, "GET", "/x")
        assert (r.status, r.body) == (503, b"busy")
        assert not pool._idle.get(("127.0.0.1", port))


async def test_refused_timeout_and_malformed():
    pool = LoopbackPool(timeout=0.3)
    with pytest.raises(Refused, match="nothing listens"):
        await pool.request("127.0.0.1", free_port(), "GET", "/")

    async def silent(reader, writer) -> None:
        await read_request(reader)
        await asyncio.sleep(2)

    async with raw_server(silent) as (port, _):
        with pytest.raises(LoopbackError, match="did not answer within 0.3 s"):
            await pool.request("127.0.0.1", port, "GET", "/")

    async def garbage(reader, writer) -> None:
        await read_request(reader)
        writer.write(b"this is not HTTP\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.5)

    async with raw_server(garbage) as (port, _):
        with pytest.raises(LoopbackError, match="malformed"):
            await pool.request("127.0.0.1", port, "GET", "/")


@pytest.mark.parametrize(
    ("target", "headers"),
    [("/a b", {}), ("/a\r\nX: y", {}), ("/", {"X-A": "1\r\nX-B: 2"}), ("/", {"X-A\n": "1"})],
)
async def test_no_request_smuggling(target, headers):
    with pytest.raises(ValueError, match="control character"):
        await LoopbackPool().request("127.0.0.1", 1, "GET", target, b"", headers)


async def test_requests_past_max_connections_wait_their_turn():
    now = {"open": 0, "most": 0}

    async def handler(reader, writer) -> None:
        now["open"] += 1
        now["most"] = max(now["most"], now["open"])
        try:
            while True:
                await read_request(reader)
                await asyncio.sleep(0.05)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            now["open"] -= 1

    pool = LoopbackPool(timeout=5, max_connections=2)
    async with raw_server(handler) as (port, accepted):
        replies = await asyncio.gather(*(pool.request("127.0.0.1", port, "GET", "/") for _ in range(6)))
        assert [r.body for r in replies] == [b"ok"] * 6
        assert now["most"] == 2 and len(accepted) == 2  # two connections, each reused
        pool.close()
    short = LoopbackPool(timeout=5, max_connections=1)
    async with raw_server(handler) as (port, _):
        first = asyncio.ensure_future(short.request("127.0.0.1", port, "GET", "/"))
        await asyncio.sleep(0.01)  # it holds the one slot
        short.timeout = 0.01  # for the next request's wait
        with pytest.raises(LoopbackError, match="no connection to 127.0.0.1:.* was free within"):
            await short.request("127.0.0.1", port, "GET", "/")
        short.timeout = 5
        assert (await first).body == b"ok"
        short.close()
