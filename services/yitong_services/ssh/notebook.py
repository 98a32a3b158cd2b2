"""A notebook server's shell over its own terminal API, as jupyterhub-ssh does it: create a
terminal (``POST <server>/api/terminals``), speak terminado's JSON messages on its websocket
(``["stdin", text]``, ``["set_size", rows, cols]`` in; ``["stdout", text]`` out), delete it at
the end. It works on every backend, because it only needs the server's URL through the proxy
and a short-lived hub token of the owner limited to that one server.

``ssh host CMD`` runs CMD in that terminal between two markers the gateway recognises: the
output between them is the command's (stdout and stderr together, as a terminal has them) and
the status after the second marker is the channel's exit status.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import json
import re
import secrets
from typing import Any
from urllib.parse import quote

import asyncssh
import httpx

from .local_shell import CHUNK

HOLD = 48


class ServerRefused(Exception):
    """The notebook server could not be reached or refused; the message is for the person."""


def exec_line(command: str, nonce: str) -> str:
    """What is typed into the terminal for ``ssh host CMD`` (pure). The command travels as
    base64, so no character of it is interpreted by the line editor, and runs in a subshell, so
    its own ``exit`` still reaches the end marker; the markers are printed from two halves so the
    echo of this line never contains them."""
    encoded = base64.b64encode(command.encode()).decode()
    return (
        f" stty -echo -onlcr 2>/dev/null; printf '%s%s\\n' YT{nonce} B;"
        f' (eval "$(printf %s {encoded} | base64 -d)"); __yt_rc=$?;'
        f' printf \'\\n%s%s:%s\\n\' YT{nonce} E "$__yt_rc"; exit "$__yt_rc"\r'
    )


class ExecOutput:
    """Cuts a terminal's output to what lies between the begin and end markers (pure)."""

    def __init__(self, nonce: str) -> None:
        self.begin = f"YT{nonce}B\n"
        self.end = re.compile(rf"\nYT{nonce}E:(\d+)\n")
        self.buf = ""
        self.started = False
        self.status: int | None = None

    def feed(self, text: str) -> str:
        """Text to pass on now (some is held back while it could be the start of the end marker)."""
        self.buf += text
        if not self.started:
            at = self.buf.find(self.begin)
            if at < 0:
                self.buf = self.buf[-len(self.begin) :]
                return ""
            self.started = True
            self.buf = self.buf[at + len(self.begin) :]
        if self.status is not None:
            return ""
        found = self.end.search(self.buf)
        if found:
            self.status = int(found.group(1))
            out, self.buf = self.buf[: found.start()], ""
            return out
        cut = max(0, len(self.buf) - HOLD)  # the end marker is shorter than HOLD
        out, self.buf = self.buf[:cut], self.buf[cut:]
        return out


async def run(process: asyncssh.SSHServerProcess, base_url: str, token: str, client: httpx.AsyncClient) -> int:
    """Bridge ``process`` to a new terminal of the server at ``base_url`` (``.../user/alice/``)."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    headers = {"Authorization": f"token {token}"}
    try:
        r = await client.post(f"{base_url}api/terminals", headers=headers)
    except httpx.HTTPError as e:
        raise ServerRefused(f"the notebook server cannot be reached: {e}") from None
    if r.status_code != 200:
        raise ServerRefused(f"the notebook server refused a terminal ({r.status_code}): terminals may be disabled")
    name = str(r.json()["name"])
    ws_url = re.sub(r"^http", "ws", base_url) + f"terminals/websocket/{quote(name, safe='')}"
    try:
        ws = await websocket_connect(HTTPRequest(ws_url, headers=headers), max_message_size=16 << 20)
    except Exception as e:
        await _delete(client, base_url, name, headers)
        raise ServerRefused(f"the notebook server's terminal cannot be opened: {e}") from None
    try:
        return await _bridge(process, ws)
    finally:
        ws.close()
        await _delete(client, base_url, name, headers)


async def _delete(client: httpx.AsyncClient, base_url: str, name: str, headers: dict[str, str]) -> None:
    with contextlib.suppress(httpx.HTTPError):
        await client.delete(f"{base_url}api/terminals/{quote(name, safe='')}", headers=headers)


async def _bridge(process: asyncssh.SSHServerProcess, ws: Any) -> int:
    command = process.command
    width, height, _pw, _ph = process.get_terminal_size()
    if width and height:
        await ws.write_message(json.dumps(["set_size", height, width, 0, 0]))
    nonce = secrets.token_hex(8)
    cut = ExecOutput(nonce) if command is not None else None
    started = asyncio.Event()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")

    async def send(data: bytes) -> None:
        text = decoder.decode(data)
        if text:
            await ws.write_message(json.dumps(["stdin", text]))

    async def stdin() -> None:
        if cut is not None:
            await started.wait()
        last = b"\n"
        while True:
            try:
                data = await process.stdin.read(CHUNK)
            except asyncssh.TerminalSizeChanged as e:
                await ws.write_message(json.dumps(["set_size", e.height, e.width, 0, 0]))
                continue
            except (asyncssh.BreakReceived, asyncssh.SignalReceived):
                continue
            except (asyncssh.Error, OSError):
                return
            if not data:
                break
            last = data[-1:]
            await send(data)
        if cut is not None:  # end of input for the command: ^D (twice after a partial line)
            await ws.write_message(json.dumps(["stdin", "\x04" if last == b"\n" else "\x04\x04"]))

    if command is not None:
        await ws.write_message(json.dumps(["stdin", exec_line(command, nonce)]))
    feeder = asyncio.create_task(stdin())
    try:
        while True:
            msg = await ws.read_message()
            if msg is None:
                break
            kind, *rest = json.loads(msg)
            if kind == "disconnect":
                break
            if kind != "stdout" or not rest:
                continue
            text = str(rest[0])
            if cut is None:
                process.stdout.write(text.encode())
                continue
            out = cut.feed(text)
            if cut.started:
                started.set()
            if out:
                process.stdout.write(out.encode())
            if cut.status is not None:
                return cut.status
        return 0 if cut is None else 255
    finally:
        feeder.cancel()
