"""The cache of the hub's answers about tokens (core/hub.py ``HubClient``), as HubAuth's
``cache_max_age``: bounded, shared by concurrent misses, and a token revoked in the real hub
stops working here within ``service.hub_cache_seconds``."""

from __future__ import annotations

import asyncio
import time

from yitong_services.core.hub import HubClient


async def test_ttl_bound_and_shared_misses():
    hub = HubClient("http://127.0.0.1:9/hub/api", "unused", ttl=1.0, max_entries=2)  # a stalled loop: still a hit
    calls: list[str] = []

    def fetcher(key: str):
        async def fetch():
            calls.append(key)
            await asyncio.sleep(0.05)
            return {"name": key}

        return fetch

    # 20 concurrent misses of one token: one request to the hub
    got = await asyncio.gather(*(hub._cached("token:a", fetcher("a")) for _ in range(20)))
    assert calls == ["a"] and all(g == {"name": "a"} for g in got)
    assert await hub._cached("token:a", fetcher("a")) == {"name": "a"} and calls == ["a"]  # a hit
    # bounded: a third key drops the least recently used one
    await hub._cached("token:b", fetcher("b"))
    await hub._cached("token:a", fetcher("a"))  # a is now the most recent
    await hub._cached("token:c", fetcher("c"))
    assert list(hub._cache) == ["token:a", "token:c"]
    # expiry: after ttl the hub is asked again
    await asyncio.sleep(1.05)
    await hub._cached("token:a", fetcher("a"))
    assert calls == ["a", "b", "c", "a"]


async def test_revoked_token_stops_within_the_ttl(hub, service_factory):
    ttl = 1.0
    async with service_factory(service={"hub_cache_seconds": ttl}) as svc:
        made = hub.api("POST", "/users/alice/tokens", json={"note": "revoked soon", "expires_in": 600}).json()
        headers = {"Authorization": f"token {made['token']}"}
        r = await svc.call(None, "GET", "me", headers=headers)
        assert r.status_code == 200 and r.json()["name"] == "alice", r.text
        hub.api("DELETE", f"/users/alice/tokens/{made['id']}")
        revoked = time.monotonic()
        # within the TTL the cached answer may still serve; a request made after it (the answer
        # was cached before the revocation) gets the hub's refusal, however long it then takes
        while True:
            asked = time.monotonic()
            if (r := await svc.call(None, "GET", "me", headers=headers)).status_code != 200:
                break
            assert asked - revoked <= ttl + 0.05, "a revoked token outlived the cache TTL"
            await asyncio.sleep(0.1)
        assert r.status_code == 401, r.text


async def test_no_cache_asks_every_time(hub, service_factory):
    async with service_factory(service={"hub_cache_seconds": 0}) as svc:
        made = hub.api("POST", "/users/bob/tokens", json={"note": "no cache", "expires_in": 600}).json()
        headers = {"Authorization": f"token {made['token']}"}
        assert (await svc.call(None, "GET", "me", headers=headers)).status_code == 200
        hub.api("DELETE", f"/users/bob/tokens/{made['id']}")
        assert (await svc.call(None, "GET", "me", headers=headers)).status_code == 401
