"""Async client for the three platform-service calls the spawner makes (docs/architecture.md).

`GET /spawn-options?user=`, `POST /allocations`, `DELETE /allocations/{id}`. Refusals become
`PlatformError(status, detail)` carrying the service's `{"detail": "..."}` sentence unchanged.
The spawn options carry `account` (`{name, uid, gid, home}` in multi-user mode, else null): the
one place the spawner learns which system account a person's server runs as.
"""

from __future__ import annotations

from typing import Any

import httpx


class PlatformError(Exception):
    """The platform service refused a request or could not be reached (status 0)."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return body["detail"]
    if isinstance(body, dict) and body.get("detail") is not None:
        return str(body["detail"])  # FastAPI validation errors are lists
    return f"the platform service answered {response.status_code} {response.reason_phrase}"


class PlatformClient:
    """One short-lived httpx.AsyncClient per call: the hub never blocks on the service."""

    def __init__(self, base_url: str, token: str = "", timeout: float = 10.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if not self.base_url:
            raise PlatformError(0, "the platform API URL is not configured (YITONG_PLATFORM_API_URL)")
        headers = {"Authorization": f"token {self.token}"} if self.token else {}
        try:
            async with httpx.AsyncClient(timeout=self.timeout, headers=headers) as client:
                response = await client.request(method, self.base_url + path, **kwargs)
        except httpx.HTTPError as e:
            raise PlatformError(0, f"the platform service is not reachable ({e.__class__.__name__})") from e
        if response.status_code >= 400:
            raise PlatformError(response.status_code, _detail(response))
        return response

    async def spawn_options(self, user: str) -> dict[str, Any]:
        response = await self._request("GET", "/spawn-options", params={"user": user})
        return response.json()

    async def allocate(self, user: str, vc: str, profile: str, ref: str, kind: str = "server") -> dict[str, Any]:
        body = {"user": user, "vc": vc, "profile": profile, "kind": kind, "ref": ref}
        response = await self._request("POST", "/allocations", json=body)
        return response.json()

    async def release(self, allocation_id: int | str) -> None:
        try:
            await self._request("DELETE", f"/allocations/{allocation_id}")
        except PlatformError as e:
            if e.status != 404:  # already released is fine
                raise
