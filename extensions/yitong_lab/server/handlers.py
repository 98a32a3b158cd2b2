"""Routes of the server extension (relative to the server's ``base_url``).

- ``GET|POST|PUT|PATCH|DELETE yitong/api/<path>``: forwarded to ``$YITONG_API_URL/<path>`` with the
  server's token, so the browser never holds it; the upstream status and JSON body come back.
- ``GET yitong/api-info``: ``{"configured": bool, "vc": ..., "profile": ...}``.

Both need a logged-in user of this server (``@web.authenticated``) and pass the authorizer
(``@authorized``, resource ``yitong``); writes are XSRF-checked as every ``APIHandler``.
The upstream call is async (tornado's AsyncHTTPClient): the event loop is never blocked.
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from yitong_lab.client import api_token, api_url

FORWARDED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def upstream_url(base: str, path: str, query: str) -> str | None:
    """``base`` + quoted ``path`` (+ ``?query``); ``None`` when the path tries to climb out."""
    segments = path.split("/")
    if any(segment in (".", "..") for segment in segments):
        return None
    url = f"{base.rstrip('/')}/{quote(path, safe='/')}"
    return f"{url}?{query}" if query else url


def decode_body(body: bytes, status: int) -> object:
    """The upstream JSON, or an error model when the upstream answered something else."""
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return {"detail": f"the platform API answered HTTP {status} without JSON"}


class YitongHandler(APIHandler):
    auth_resource = "yitong"

    def send(self, status: int, body: object, reason: str | None = None) -> None:
        self.set_status(status, reason=reason)
        if body is None or status == 204:
            self.finish()
        else:
            self.finish(json.dumps(body))


class ForwardHandler(YitongHandler):
    """Forwards one call to the platform API with ``Authorization: token $JUPYTERHUB_API_TOKEN``."""

    async def forward(self, path: str) -> None:
        base = api_url()
        if not base:
            self.send(503, {"detail": "the platform API is not configured: YITONG_API_URL is not set"
                                      " in this server's environment"})
            return
        url = upstream_url(base, path, self.request.query)
        if url is None:
            self.send(400, {"detail": "'.' and '..' are not allowed in a platform API path"})
            return
        headers = {"Accept": "application/json"}
        if api_token():
            headers["Authorization"] = f"token {api_token()}"
        body = self.request.body or None
        if body is not None:
            headers["Content-Type"] = self.request.headers.get("Content-Type", "application/json")
        request = HTTPRequest(url, method=self.request.method, headers=headers, body=body,
                              allow_nonstandard_methods=True, follow_redirects=False,
                              connect_timeout=10, request_timeout=60)
        try:
            response = await AsyncHTTPClient().fetch(request, raise_error=False)
        except (OSError, HTTPClientError) as error:
            self.log.warning("yitong_lab: platform API at %s unreachable: %s", base, error)
            self.send(502, {"detail": f"cannot reach the platform API at {base}: {error}"})
            return
        self.send(response.code, decode_body(response.body, response.code), reason=response.reason)

    @web.authenticated
    @authorized
    async def get(self, path: str) -> None:
        await self.forward(path)

    @web.authenticated
    @authorized
    async def post(self, path: str) -> None:
        await self.forward(path)

    @web.authenticated
    @authorized
    async def put(self, path: str) -> None:
        await self.forward(path)

    @web.authenticated
    @authorized
    async def patch(self, path: str) -> None:
        await self.forward(path)

    @web.authenticated
    @authorized
    async def delete(self, path: str) -> None:
        await self.forward(path)


class InfoHandler(YitongHandler):
    """Whether this server can reach the platform, and the VC/profile it was started in."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.send(200, {
            "configured": bool(api_url()),
            "vc": os.environ.get("YITONG_VC") or None,
            "profile": os.environ.get("YITONG_PROFILE") or None,
        })


#: the dataset upload routes (``uploads.upload_handlers``) are added next to these by the extension
default_handlers = [
    (r"yitong/api/(.*)", ForwardHandler),
    (r"yitong/api-info", InfoHandler),
]
