"""A hub that cannot check a token is told apart from a token that is not good (core/hub.py,
core/errors.py): 503 with ``Retry-After`` and a sentence that says the hub is unavailable, never
401 "authentication required". The real service and the real hub; the hub's failures are a closed
port (connection refused) and, for an answer the real hub gives only when its database fails, a
stand-in HTTP server on loopback that answers every request with that status (JupyterHub answers
403 to every token, the service's own included, when it cannot read or record one)."""

from __future__ import annotations

import asyncio
import contextlib

from helpers import free_port


@contextlib.asynccontextmanager
async def answering(status: int):
    """A stand-in for a failing hub on a free loopback port: every request answered ``status``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                f"HTTP/1.1 {status} Failing\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                "Connection: close\r\n\r\n{}".encode()
            )
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/hub/api"
    finally:
        server.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def hub_at(svc, url: str):
    hub = svc.ctx.hub
    real = hub.api_url
    hub.api_url = url
    hub.forget(lambda key, value: True)
    hub._self_check = None
    try:
        yield
    finally:
        hub.api_url = real
        hub.forget(lambda key, value: True)
        hub._self_check = None


def _unavailable(r, why: str) -> None:
    assert r.status_code == 503, r.text
    assert r.headers["content-type"] == "application/json" and r.headers["retry-after"] == "5"
    detail = r.json()["detail"]
    assert detail.startswith("the hub (JupyterHub) is unavailable and could not check your token: "), detail
    assert why in detail and "nothing is wrong with your token" in detail, detail


CASES = [
    (None, "it does not answer"),
    (500, "it answered HTTP 500"),
    (503, "it answered HTTP 503"),
    (403, "it refuses the platform's own token too (its database may be failing)"),
]


async def test_a_hub_that_cannot_check_tokens_is_a_503(service):
    """Each failure in turn on one service (None: nothing listens, connection refused); between
    them the real hub is back, the same token works and a bad one is the caller's (401)."""
    for status, why in CASES:
        async with contextlib.AsyncExitStack() as stack:
            if status is None:
                url = f"http://127.0.0.1:{free_port()}/hub/api"
            else:
                url = await stack.enter_async_context(answering(status))
            await stack.enter_async_context(hub_at(service, url))
            _unavailable(await service.call("alice", "GET", "vcs"), why)
            _unavailable(await service.call("alice", "POST", "datasets", json={"vc": "vision", "name": "x"}), why)
            # the endpoints' /v2 pass-through (routes/endpoints_v2.py) answers in its own shape
            r = await service.call("alice", "GET", "endpoints/iris/v2/health/ready")
            assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
            assert r.json()["error"].startswith("the hub (JupyterHub) is unavailable") and why in r.json()["error"]
        assert (await service.call("alice", "GET", "vcs")).status_code == 200
        r = await service.call(None, "GET", "vcs", headers={"Authorization": "token not-a-token"})
        assert r.status_code == 401 and r.json()["detail"].startswith("authentication required"), r.text
