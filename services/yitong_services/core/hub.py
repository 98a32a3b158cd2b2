"""The JupyterHub REST API as this service uses it (async httpx, short TTL cache)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import quote

import httpx


class HubError(Exception):
    """The hub could not be asked (down, or refused the service's own token)."""


class HubUnavailable(HubError):
    """The hub does not answer, or answers with an error of its own (5xx; or it refuses the
    service's own token along with a person's, as JupyterHub does when its database fails): not
    the caller's fault, a 503 (core/errors.py)."""


#: what a person reads when the hub cannot check their token
UNAVAILABLE = (
    "the hub (JupyterHub) is unavailable and could not check your token: {why}; nothing is wrong with"
    " your token: try again in a few seconds, and if it lasts an administrator must look at the hub"
    " (its log, its database's disk)"
)


class HubClient:
    """Calls ``{api_url}`` with the service's token; caches answers for ``ttl`` seconds.

    A token's identity is asked of the hub at most once per ``ttl`` (``service.hub_cache_seconds``,
    default 5 s), so a token revoked in the hub stops working here within ``ttl`` seconds; tokens
    this service revokes itself are dropped from the cache at once."""

    def __init__(self, api_url: str, token: str, ttl: float = 5.0, max_entries: int = 10_000) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.ttl = ttl
        self.max_entries = max_entries
        self._cache: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        self._client: httpx.AsyncClient | None = None
        self._self_check: tuple[float, asyncio.Future[bool]] | None = None  # (until, answer): _answers_itself

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=10)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _get(self, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {token or self.token}", **kwargs.pop("headers", {})}
        try:
            return await self.client.get(f"{self.api_url}{path}", headers=headers, **kwargs)
        except httpx.HTTPError as e:
            raise HubUnavailable(f"cannot reach JupyterHub at {self.api_url}: {e}") from e

    async def _cached(self, key: str, fetch: Any) -> Any:
        """A TTL cache as HubAuth's ``cache_max_age``: answers live ``ttl`` seconds, at most
        ``max_entries`` are kept (least recently used dropped first), and concurrent misses of one
        key share a single request to the hub."""
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit and hit[0] > now:
            self._cache.move_to_end(key)
            return hit[1]
        pending = self._inflight.get(key)
        if pending is None:
            pending = asyncio.ensure_future(fetch())
            self._inflight[key] = pending
            try:
                value = await asyncio.shield(pending)
            finally:
                self._inflight.pop(key, None)
            if self.ttl > 0:
                self._cache[key] = (time.monotonic() + self.ttl, value)
                self._cache.move_to_end(key)
                while len(self._cache) > self.max_entries:
                    self._cache.popitem(last=False)
            return value
        return await asyncio.shield(pending)

    def forget(self, predicate: Any) -> None:
        """Drop cached answers whose ``(key, value)`` matches (a revoked token, a changed user)."""
        for key in [k for k, (_, v) in self._cache.items() if predicate(k, v)]:
            del self._cache[key]

    async def identify(self, token: str) -> dict | None:
        """The hub's model of whoever holds ``token`` (with its ``scopes``), None if invalid."""

        async def fetch() -> dict | None:
            try:
                r = await self._get("/user", token=token)
            except HubUnavailable:
                raise HubUnavailable(UNAVAILABLE.format(why="it does not answer")) from None
            if r.status_code in (401, 403, 404):
                if not await self._answers_itself():
                    raise HubUnavailable(
                        UNAVAILABLE.format(why="it refuses the platform's own token too (its database may be failing)")
                    )
                return None
            if r.status_code >= 500:
                raise HubUnavailable(UNAVAILABLE.format(why=f"it answered HTTP {r.status_code}"))
            if r.status_code != 200:
                raise HubError(f"JupyterHub answered {r.status_code} identifying a token")
            return r.json()

        return await self._cached("token:" + token, fetch)

    async def _answers_itself(self) -> bool:
        """Whether the hub identifies the service's own token (a refused token is then the
        caller's): asked once a second at most, its answer shared by the refusals of that second."""
        if not self.token:  # no token of its own to compare with (a service run without the hub)
            return True
        now = time.monotonic()
        if self._self_check is not None and self._self_check[0] > now:
            return await asyncio.shield(self._self_check[1])

        async def ask() -> bool:
            try:
                return (await self._get("/user")).status_code == 200
            except HubUnavailable:
                return False

        future = asyncio.ensure_future(ask())
        self._self_check = (now + 1.0, future)
        return await asyncio.shield(future)

    async def user(self, name: str, fresh: bool = False) -> dict | None:
        """``GET /users/{name}`` with the service's token (admin flag, groups); None if unknown.
        ``fresh``: ask the hub now (a server's state changes within the cache's lifetime)."""

        async def fetch() -> dict | None:
            r = await self._get(f"/users/{quote(name, safe='')}")
            if r.status_code == 404:
                return None
            if r.status_code != 200:
                raise HubError(
                    f"JupyterHub answered {r.status_code} to GET /users/{name}: the service token needs read:users"
                )
            return r.json()

        if fresh:
            self.forget(lambda key, _: key == "user:" + name)
        return await self._cached("user:" + name, fetch)

    async def active_servers_of(self, name: str) -> set[str]:
        """``{"alice/", "alice/gpu"}``: the servers of one user that are running or pending."""
        model = await self.user(name, fresh=True) or {}
        return {
            f"{name}/{server_name}"
            for server_name, server in (model.get("servers") or {}).items()
            if server.get("ready") or server.get("pending")
        }

    async def active_servers(self) -> set[str]:
        """``{"alice/", "alice/gpu", ...}``: every server that is running or pending."""
        refs: set[str] = set()
        offset = 0
        while True:
            r = await self._get(
                "/users",
                params={"state": "active", "offset": offset, "limit": 200},
                headers={"Accept": "application/jupyterhub-pagination+json"},
            )
            if r.status_code != 200:
                raise HubError(
                    f"JupyterHub answered {r.status_code} to GET /users?state=active:"
                    " the service token needs list:users and read:servers"
                )
            body = r.json()
            items = body["items"] if isinstance(body, dict) else body
            for user in items:
                for server_name, server in (user.get("servers") or {}).items():
                    if server.get("ready") or server.get("pending"):
                        refs.add(f"{user['name']}/{server_name}")
            nxt = body.get("_pagination", {}).get("next") if isinstance(body, dict) else None
            if not nxt:
                return refs
            offset = nxt["offset"]

    async def users(self, limit: int = 5000) -> list[dict]:
        """Every hub user with their servers (the admin console), at most ``limit``, 200 a page."""
        out: list[dict] = []
        offset = 0
        while len(out) < limit:
            r = await self._get(
                "/users",
                params={"offset": offset, "limit": 200, "include_stopped_servers": "1"},
                headers={"Accept": "application/jupyterhub-pagination+json"},
            )
            if r.status_code != 200:
                raise HubError(f"JupyterHub answered {r.status_code} to GET /users: the service token needs list:users")
            body = r.json()
            out.extend(body["items"] if isinstance(body, dict) else body)
            nxt = body.get("_pagination", {}).get("next") if isinstance(body, dict) else None
            if not nxt:
                break
            offset = nxt["offset"]
        return out[:limit]

    # ---- tokens the service mints for a user's jobs (the service's role needs the ``tokens`` scope) ----

    async def create_token(self, user: str, scopes: list[str], expires_in: int, note: str) -> tuple[str, str]:
        """``POST /users/{user}/tokens``: a new token of ``user`` with ``scopes`` that expires in
        ``expires_in`` seconds -> ``(token, token id)``."""
        body = {"scopes": scopes, "expires_in": int(expires_in), "note": note}
        try:
            r = await self.client.post(
                f"{self.api_url}/users/{quote(user, safe='')}/tokens",
                json=body,
                headers={"Authorization": f"token {self.token}"},
            )
        except httpx.HTTPError as e:
            raise HubError(f"cannot reach JupyterHub at {self.api_url}: {e}") from e
        if r.status_code != 201:
            raise HubError(
                f"JupyterHub answered {r.status_code} creating a token for {user}"
                f" (the service token needs the scope 'tokens'): {r.text[:300]}"
            )
        model = r.json()
        return model["token"], model["id"]

    async def revoke_token(self, user: str, token_id: str) -> None:
        """``DELETE /users/{user}/tokens/{id}``; a token (or user) already gone is fine."""
        try:
            r = await self.client.delete(
                f"{self.api_url}/users/{quote(user, safe='')}/tokens/{quote(token_id, safe='')}",
                headers={"Authorization": f"token {self.token}"},
            )
        except httpx.HTTPError as e:
            raise HubError(f"cannot reach JupyterHub at {self.api_url}: {e}") from e
        if r.status_code not in (204, 404):
            raise HubError(f"JupyterHub answered {r.status_code} revoking token {token_id} of {user}: {r.text[:300]}")
        # identities cached for this user's tokens are looked up again (a revoked token is refused at once)
        self.forget(lambda k, v: k.startswith("token:") and isinstance(v, dict) and v.get("name") == user)

    # ---- adding a person (the service's role needs ``admin:users`` and ``admin:groups``) ----

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self.client.request(
                method, f"{self.api_url}{path}", headers={"Authorization": f"token {self.token}"}, **kwargs
            )
        except httpx.HTTPError as e:
            raise HubError(f"cannot reach JupyterHub at {self.api_url}: {e}") from e

    async def set_password(self, name: str, password: str | None) -> tuple[bool, str | None]:
        """``PUT /passwords/{name}`` of the hub's password logins (yitong_spawner.password_api):
        ``password``, or a generated one when None -> ``(the hub has password logins, the
        generated password)``; ``(False, None)`` when it has none (an identity provider)."""
        body: dict[str, Any] = {"password": password} if password is not None else {"generate": True}
        r = await self._send("PUT", f"/yitong/passwords/{quote(name, safe='')}", json=body)
        if r.status_code == 404:
            return False, None
        if r.status_code != 200:
            raise HubError(f"JupyterHub answered {r.status_code} setting the password of {name}: {r.text[:300]}")
        return True, r.json().get("password")

    async def create_user(self, name: str) -> bool:
        """``POST /users/{name}``: True if made now, False if the hub has the user already."""
        r = await self._send("POST", f"/users/{quote(name, safe='')}")
        if r.status_code not in (201, 409):
            raise HubError(f"JupyterHub answered {r.status_code} making user {name}: {r.text[:300]}")
        self.forget(lambda key, _: key == "user:" + name)
        return r.status_code == 201

    async def add_to_group(self, group: str, name: str) -> None:
        """``POST /groups/{group}/users``, making the group first when the hub has none of that name."""
        path = f"/groups/{quote(group, safe='')}"
        r = await self._send("POST", f"{path}/users", json={"users": [name]})
        if r.status_code == 404:
            made = await self._send("POST", path)
            if made.status_code not in (201, 409):
                raise HubError(f"JupyterHub answered {made.status_code} making group {group}: {made.text[:300]}")
            r = await self._send("POST", f"{path}/users", json={"users": [name]})
        if r.status_code != 200:
            raise HubError(f"JupyterHub answered {r.status_code} adding {name} to group {group}: {r.text[:300]}")
        self.forget(lambda key, _: key == "user:" + name)
