"""The Python SDK: one small synchronous client of the platform REST API.

Inside a user's server the spawner sets ``YITONG_API_URL`` and ``JUPYTERHUB_API_TOKEN``;
elsewhere set ``YT_API_URL`` and ``YT_TOKEN``. Every failure raises :class:`YitongError`
carrying the service's ``detail`` sentence. ``httpx`` is imported on the first request,
so ``import yitong_lab.client`` stays cheap (it is loaded by the ``%yt`` magic).

>>> from yitong_lab.client import Client
>>> [vc["name"] for vc in Client().vcs()]  # doctest: +SKIP
['default', 'vision']
"""

from __future__ import annotations

import os
from typing import Any

from yitong_lab.alerts.sdk import AlertCalls
from yitong_lab.api_types import Me, ProfileOut, VCOut  # generated TypedDicts (stdlib only)
from yitong_lab.errors import YitongError
from yitong_lab.hpo.sdk import HpoCalls
from yitong_lab.jobs.sdk import Job, JobCalls, Run  # noqa: F401  (stdlib only: stays cheap)
from yitong_lab.ssh.sdk import SSHCalls

#: ``resource -> amount``: numbers, or quantities as people type them (``"16Gi"``, ``"500m"``),
#: which the platform parses (and refuses with a sentence)
Resources = dict[str, float | str]

#: tries of a create (``create_call``) and of a read: a dropped connection or a 502/503/504 is
#: retried (a create with the same key), at most CREATE_TRIES times and within RETRY_BUDGET
#: seconds, which covers a restart of the platform service or of its database
CREATE_TRIES = 10
CREATE_BACKOFF = 0.5  # seconds before the first retry, doubling up to BACKOFF_CAP
BACKOFF_CAP = 4.0
RETRY_BUDGET = 30.0
RETRY_STATUSES = (502, 503, 504)
#: methods retried like a create: reads on any transient failure; PUT and DELETE (idempotent,
#: but a delete that went through answers 404 the second time) only when the answer says the
#: platform did not take the request (502, 503)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
UNTAKEN_METHODS = ("PUT", "DELETE")


#: the REST models, generated from the OpenAPI document (``docs/generate.py``)
VC = VCOut
Profile = ProfileOut


def api_url() -> str:
    """The platform API base (``.../services/yitong/api/v1``), or ``""`` when not configured."""
    return (os.environ.get("YITONG_API_URL") or os.environ.get("YT_API_URL") or "").rstrip("/")


def api_token() -> str:
    return os.environ.get("JUPYTERHUB_API_TOKEN") or os.environ.get("YT_TOKEN") or ""


def error_detail(body: Any, status: int) -> str:
    """The sentence a person reads, from an error body (FastAPI's 422 list included)."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str) and detail:
        return detail
    if isinstance(detail, list):  # FastAPI validation errors
        parts = []
        for item in detail:
            if isinstance(item, dict):
                loc = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
                parts.append(f"{loc}: {item.get('msg', '')}" if loc else str(item.get("msg", "")))
        if parts:
            return "; ".join(parts)
    return f"the platform API answered HTTP {status}"


class Client(JobCalls, SSHCalls, HpoCalls, AlertCalls):
    """``Client(url=None, token=None)``; defaults come from the environment (see module doc).
    The job and run calls (``submit_job``, ``jobs``, ``job``, ``job_log``, ``follow_log``, ``run``,
    ``rerun``, ...) come from :class:`~yitong_lab.jobs.sdk.JobCalls`; the SSH key calls
    (``ssh_keys``, ``add_ssh_key``, ``remove_ssh_key``, ``ssh_info``) from
    :class:`~yitong_lab.ssh.sdk.SSHCalls`; the experiment calls from
    :class:`~yitong_lab.hpo.sdk.HpoCalls`; the alert calls (admins) from
    :class:`~yitong_lab.alerts.sdk.AlertCalls`."""

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 30.0):
        self.url = (url or api_url()).rstrip("/")
        self.token = token if token is not None else api_token()
        self.timeout = timeout
        self._http: Any = None  # an httpx.Client, made on first use (httpx is imported lazily)

    def request(self, method: str, path: str, json: Any = None, params: dict | None = None) -> Any:
        """One call; returns the decoded JSON body (``None`` for 204)."""
        if not self.url:
            raise YitongError(0, "the platform API is not configured: set YITONG_API_URL (or YT_API_URL)")
        method = method.upper()
        if method in SAFE_METHODS or method in UNTAKEN_METHODS:
            return self._send(method, path, json=json, params=params, reads=method in SAFE_METHODS)
        import httpx  # lazy: keep `import yitong_lab` and `%load_ext yitong_lab` instant

        try:
            response = self.http().request(method, self.url + path, json=json, params=params)
        except httpx.HTTPError as exc:
            raise YitongError(0, f"cannot reach the platform API at {self.url}: {exc}") from None
        return self.check(response)

    def create_call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        content_type: str | None = None,
        params: dict | None = None,
        key: str | None = None,
    ) -> Any:
        """A create (submit a job, clone one, commit a dataset version) sent with an
        ``Idempotency-Key`` (a fresh UUID unless ``key`` is given) and retried with the same key
        after a dropped connection or a 502/503/504 (``CREATE_TRIES`` tries, backoff from
        ``CREATE_BACKOFF`` s): the service makes one object however often the request arrives,
        and a retry of a request it already answered gets that answer again."""
        if not self.url:
            raise YitongError(0, "the platform API is not configured: set YITONG_API_URL (or YT_API_URL)")
        import uuid

        headers = {"Idempotency-Key": key or str(uuid.uuid4())}
        if content_type:
            headers["Content-Type"] = content_type
        return self._send(method, path, json=json, content=content, params=params, headers=headers, reads=True)

    def _send(self, method: str, path: str, *, reads: bool, **kwargs: Any) -> Any:
        """One request, tried again after a transient failure (a dropped connection when
        ``reads``, a 502/503/504, or 502/503 only when not) at most ``CREATE_TRIES`` times within
        ``RETRY_BUDGET`` seconds, waiting what a ``Retry-After`` asks (within the budget)."""
        if not self.url:
            raise YitongError(0, "the platform API is not configured: set YITONG_API_URL (or YT_API_URL)")
        import time

        import httpx

        statuses = RETRY_STATUSES if reads else (502, 503)
        deadline = time.monotonic() + RETRY_BUDGET
        for attempt in range(1, CREATE_TRIES + 1):
            wait = min(BACKOFF_CAP, CREATE_BACKOFF * 2 ** (attempt - 1))
            last = attempt == CREATE_TRIES
            try:
                response = self.http().request(method, self.url + path, **kwargs)
            except httpx.TransportError as exc:
                if last or not reads or time.monotonic() + wait > deadline:
                    raise YitongError(
                        0, f"cannot reach the platform API at {self.url} ({attempt} tries): {exc}"
                    ) from None
            except httpx.HTTPError as exc:
                raise YitongError(0, f"cannot reach the platform API at {self.url}: {exc}") from None
            else:
                if not _transient(response, statuses):
                    return self.check(response)
                wait = max(wait, min(BACKOFF_CAP * 2, _retry_after(response)))
                if last or time.monotonic() + wait > deadline:
                    return self.check(response)
            time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def http(self) -> Any:
        """The shared ``httpx.Client`` (token header set; thread-safe), for streaming calls."""
        if not self.url:
            raise YitongError(0, "the platform API is not configured: set YITONG_API_URL (or YT_API_URL)")
        if self._http is None:
            import httpx

            headers = {"Accept": "application/json"}
            if self.token:
                headers["Authorization"] = f"token {self.token}"
            limits = httpx.Limits(max_connections=16, max_keepalive_connections=8)
            # a plain-HTTP API (loopback in a notebook server) never uses TLS (redirects are not
            # followed): no CA bundle to load, 30 ms of every `yt` command
            tls = not self.url.startswith("http://")
            self._http = httpx.Client(headers=headers, timeout=self.timeout, limits=limits, verify=tls)
        return self._http

    @staticmethod
    def check(response: Any) -> Any:
        """The decoded JSON body of a read response, or :class:`YitongError` for a 4xx/5xx."""
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        if response.is_error:
            raise YitongError(response.status_code, error_detail(body, response.status_code))
        return body

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- typed calls, one per contract route -------------------------------------------------

    def me(self) -> Me:
        return self.request("GET", "/me")

    def vcs(self) -> list[VC]:
        return self.request("GET", "/vcs")

    def vc(self, name: str) -> VC:
        return self.request("GET", f"/vcs/{_segment(name)}")

    def create_vc(
        self,
        name: str,
        *,
        description: str = "",
        quota: Resources | None = None,
        groups: list[str] | None = None,
        profiles: list[str] | None = None,
        user_caps: Resources | None = None,
    ) -> VC:
        body = {
            "name": name,
            "description": description,
            "quota": quota or {},
            "groups": list(groups or []),
            "profiles": list(profiles or []),
            "user_caps": user_caps or {},
        }
        return self.request("POST", "/vcs", json=body)

    def update_vc(self, name: str, **changes: Any) -> VC:
        """PATCH only the given fields (description, quota, groups, profiles, user_caps)."""
        body = {key: value for key, value in changes.items() if value is not None}
        return self.request("PATCH", f"/vcs/{_segment(name)}", json=body)

    def delete_vc(self, name: str) -> None:
        self.request("DELETE", f"/vcs/{_segment(name)}")

    def profiles(self) -> list[Profile]:
        return self.request("GET", "/profiles")

    def usage(self) -> Any:
        return self.request("GET", "/usage")


def _transient(response: Any, statuses: tuple[int, ...] = RETRY_STATUSES) -> bool:
    """A gateway's 502/503/504 (the platform restarting, a proxy timing out) or the platform's
    503 with ``Retry-After`` (its database restarting), not the platform's own lasting 503
    refusal (a JSON ``detail`` without ``Retry-After``, as "this platform's backend has no job
    runner yet")."""
    if response.status_code not in statuses:
        return False
    if response.status_code != 503 or "retry-after" in response.headers:
        return True
    try:
        body = response.json()
    except ValueError:
        return True
    return not (isinstance(body, dict) and isinstance(body.get("detail"), str))


def _retry_after(response: Any) -> float:
    """Seconds a ``Retry-After: N`` asks for (0 when absent or a date)."""
    try:
        return max(0.0, float(response.headers.get("retry-after", "0")))
    except ValueError:
        return 0.0


def _segment(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")
