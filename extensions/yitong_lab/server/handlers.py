"""Routes of the server extension (relative to the server's ``base_url``).

- ``GET|POST|PUT|PATCH|DELETE yitong/api/<path>``: forwarded to ``$YITONG_API_URL/<path>`` with the
  server's token, so the browser never holds it; the upstream status and JSON body come back
  (with its ``ETag``; ``If-None-Match`` goes up and a 304 comes back).
- ``GET yitong/api-info``: ``{"configured": bool, "vc": ..., "profile": ...}``.
- ``GET yitong/jobs/<id>/tensorboard``: fetches the job from the platform with the server's token
  (the user's VC membership applies: another VC's job is a 404), starts or reuses a TensorBoard
  on its ``outputs_path`` (:class:`yitong_lab.proxies.tensorboard.JobBoards`, on a unix socket)
  and redirects (302) to ``<base_url>yitong/jobs/<id>/tensorboard/``, which ``board_proxy``
  forwards to that socket. 501 when TensorBoard is not installed, 409 when the outputs directory
  does not exist (yet) or cannot be seen from here.

All need a logged-in user of this server (``@web.authenticated``) and pass the authorizer
(``@authorized``, resource ``yitong``); writes are XSRF-checked as every ``APIHandler``.
The upstream call is async (tornado's AsyncHTTPClient): the event loop is never blocked.
"""

from __future__ import annotations

import asyncio
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


class _Relay:
    """Upstream headers and body chunks -> the handler: ``text/*`` is written through as it
    comes (with the upstream status), anything else is collected."""

    def __init__(self, handler: YitongHandler):
        self.handler, self.status, self.streaming = handler, 200, False
        self.chunks: list[bytes] = []
        self.content_type = ""

    def header(self, line: str) -> None:
        if line.startswith("HTTP/"):
            self.status = int(line.split()[1])
        elif line.lower().startswith("etag:"):  # conditional GETs (If-None-Match) work through us
            self.handler.set_header("ETag", line.split(":", 1)[1].strip())
        elif line.lower().startswith("idempotent-replayed:"):
            self.handler.set_header("Idempotent-Replayed", line.split(":", 1)[1].strip())
        elif line.lower().startswith("content-type:") and line.split(":", 1)[1].strip().startswith("text/"):
            self.streaming = True
            self.content_type = line.split(":", 1)[1].strip()
            self.handler.set_status(self.status)
            self.handler.set_header("Content-Type", self.content_type)
            self.handler.set_header("Cache-Control", "no-store")

    def chunk(self, data: bytes) -> None:
        if not self.streaming:
            self.chunks.append(data)
            return
        stream = getattr(self.handler.request.connection, "stream", None)  # tornado's HTTP1Connection
        if stream is not None and stream.closed():
            raise HTTPClientError(499, "the browser closed the log stream")
        self.handler.write(data)
        self.handler.flush()


class ForwardHandler(YitongHandler):
    """Forwards one call to the platform API with ``Authorization: token $JUPYTERHUB_API_TOKEN``."""

    async def forward(self, path: str) -> None:
        base = api_url()
        if not base:
            self.send(
                503,
                {
                    "detail": "the platform API is not configured: YITONG_API_URL is not set"
                    " in this server's environment"
                },
            )
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
        if "Idempotency-Key" in self.request.headers:  # the panel's key for a create, as it sent it
            headers["Idempotency-Key"] = self.request.headers["Idempotency-Key"]
        if "If-None-Match" in self.request.headers:  # the upstream answers 304 for what we hold
            headers["If-None-Match"] = self.request.headers["If-None-Match"]
        # text answers (job logs, ``?follow=1`` streams) pass through chunk by chunk as they
        # arrive; JSON answers are collected and decoded as before
        relay = _Relay(self)
        follow = "follow=1" in self.request.query or "follow=true" in self.request.query
        request = HTTPRequest(
            url,
            method=self.request.method,
            headers=headers,
            body=body,
            allow_nonstandard_methods=True,
            follow_redirects=False,
            connect_timeout=10,
            request_timeout=3600 if follow else 60,
            header_callback=relay.header,
            streaming_callback=relay.chunk,
        )
        try:
            response = await AsyncHTTPClient().fetch(request, raise_error=False)
        except (OSError, HTTPClientError) as error:
            if relay.streaming:  # the upstream went away mid-stream: end ours
                self.finish(set_content_type=relay.content_type)
                return
            self.log.warning("yitong_lab: platform API at %s unreachable: %s", base, error)
            self.send(502, {"detail": f"cannot reach the platform API at {base}: {error}"})
            return
        if relay.streaming:
            self.finish(set_content_type=relay.content_type)
            return
        if response.code == 304:
            self.set_status(304)
            self.finish()
            return
        self.send(response.code, decode_body(b"".join(relay.chunks), response.code), reason=response.reason)

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
        self.send(
            200,
            {
                "configured": bool(api_url()),
                "vc": os.environ.get("YITONG_VC") or None,
                "profile": os.environ.get("YITONG_PROFILE") or None,
            },
        )


async def platform_get(path: str) -> tuple[int, object]:
    """``(status, JSON body)`` of ``GET $YITONG_API_URL/<path>`` with the server's token."""
    base = api_url()
    if not base:
        return 503, {
            "detail": "the platform API is not configured: YITONG_API_URL is not set in this server's environment"
        }
    headers = {"Accept": "application/json"}
    if api_token():
        headers["Authorization"] = f"token {api_token()}"
    url = upstream_url(base, path, "")
    if url is None:
        return 400, {"detail": f"{path!r} is not a platform API path"}
    request = HTTPRequest(url, headers=headers, connect_timeout=10, request_timeout=60)
    try:
        response = await AsyncHTTPClient().fetch(request, raise_error=False)
    except (OSError, HTTPClientError) as error:
        return 502, {"detail": f"cannot reach the platform API at {base}: {error}"}
    return response.code, decode_body(response.body, response.code)


class JobTensorBoardHandler(YitongHandler):
    """Redirects to the TensorBoard of one job's outputs (started on first use)."""

    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        from yitong_lab.proxies.tensorboard import BoardError

        status, job = await platform_get(f"jobs/{int(job_id)}")
        if status != 200 or not isinstance(job, dict):
            self.send(status, job)
            return
        outputs = job.get("outputs_path") or ""
        if not outputs or not await asyncio.to_thread(os.path.isdir, outputs):  # a stat may block (network fs)
            self.send(
                409,
                {
                    "detail": f"job {job_id} ({job.get('state')}) has no outputs directory at "
                    f"{outputs or '?'} that this server can see"
                    + (" yet" if job.get("state") in ("queued", "admitted") else "")
                },
            )
            return
        boards = self.settings["yitong_tensorboards"]  # set by the extension's loader
        try:
            url = await boards.url(int(job_id), outputs)
        except BoardError as error:
            self.send(error.status, {"detail": str(error)})
            return
        self.redirect(url)


#: the dataset upload routes (``uploads.upload_handlers``) are added next to these by the extension
default_handlers = [
    (r"yitong/api/(.*)", ForwardHandler),
    (r"yitong/api-info", InfoHandler),
    (r"yitong/jobs/(\d+)/tensorboard", JobTensorBoardHandler),
]
