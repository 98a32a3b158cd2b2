"""The JupyterHub REST API as this service uses it (async httpx, short TTL cache)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import httpx


class HubError(Exception):
    """The hub could not be asked (down, or refused the service's own token)."""


class HubClient:
    """Calls ``{api_url}`` with the service's token; caches answers for ``ttl`` seconds."""

    def __init__(self, api_url: str, token: str, ttl: float = 2.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.ttl = ttl
        self._cache: dict[str, tuple[float, Any]] = {}
        self._client: httpx.AsyncClient | None = None

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
            raise HubError(f"cannot reach JupyterHub at {self.api_url}: {e}") from e

    async def _cached(self, key: str, fetch: Any) -> Any:
        hit = self._cache.get(key)
        now = time.monotonic()
        if hit and hit[0] > now:
            return hit[1]
        value = await fetch()
        self._cache[key] = (now + self.ttl, value)
        if len(self._cache) > 10_000:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
        return value

    async def identify(self, token: str) -> dict | None:
        """The hub's model of whoever holds ``token`` (with its ``scopes``), None if invalid."""

        async def fetch() -> dict | None:
            r = await self._get("/user", token=token)
            if r.status_code in (401, 403, 404):
                return None
            if r.status_code != 200:
                raise HubError(f"JupyterHub answered {r.status_code} identifying a token")
            return r.json()

        return await self._cached("token:" + token, fetch)

    async def user(self, name: str) -> dict | None:
        """``GET /users/{name}`` with the service's token (admin flag, groups); None if unknown."""

        async def fetch() -> dict | None:
            r = await self._get(f"/users/{quote(name, safe='')}")
            if r.status_code == 404:
                return None
            if r.status_code != 200:
                raise HubError(
                    f"JupyterHub answered {r.status_code} to GET /users/{name}: the service token needs read:users"
                )
            return r.json()

        return await self._cached("user:" + name, fetch)

    async def active_servers_of(self, name: str) -> set[str]:
        """``{"alice/", "alice/gpu"}``: the servers of one user that are running or pending."""
        model = await self.user(name) or {}
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
        self._cache = {
            k: v
            for k, v in self._cache.items()
            if not (k.startswith("token:") and isinstance(v[1], dict) and v[1].get("name") == user)
        }
