"""What jupyter-server-proxy runs for ``<base_url>code-server/``:
``python -m yitong_lab.proxies.code_server_launch --socket PATH --prefix PREFIX WORKDIR``.

code-server there (:func:`code_server.install_state`): exec it on the unix socket PATH. Not yet:
serve a small page on PATH (mode 0600, in the server's 0700 folder) that says how far its install
is and polls; once the install is done, stop serving and exec code-server on the same socket;
the page sees a different answer and reloads into VS Code. Not installed and no install running: the same page, 503, says how to
install it. Nothing is installed from here: a person's server does not write to the checkout.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from socketserver import ThreadingMixIn, UnixStreamServer

from yitong_lab.proxies.code_server import InstallState, code_server_command, install_state

MARKER = "yt-code-server-install"
POLL_SECONDS = 2.0


def message(state: InstallState) -> str:
    if state.state == "installing":
        return f"VS Code is being installed: {state.percent}%. This page opens it when it is ready."
    if state.state == "failed":
        log = f" (log: {state.log})" if state.log else ""
        return (
            f"Installing VS Code failed: {state.detail or 'no reason given'}{log}. An administrator fixes "
            "that and runs `make code-server` in the checkout; this page opens VS Code once it is installed."
        )
    return (
        "VS Code (code-server) is not installed on this server. An administrator installs it with "
        "`make code-server` in the checkout, or puts code-server on PATH."
    )


def progress_page(state: InstallState) -> str:
    """The page served instead of VS Code; polls ``?progress`` and reloads when VS Code answers."""
    text = html.escape(message(state))
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>VS Code</title>
<noscript><meta http-equiv="refresh" content="10"></noscript>
<style>body{{font:15px system-ui,sans-serif;margin:3em auto;max-width:40em;color:#222}}
progress{{width:100%;height:1.2em}}</style></head>
<body id="{MARKER}" data-state="{state.state}">
<h1>VS Code</h1>
<progress max="100" value="{state.percent}"{" hidden" if state.state != "installing" else ""}></progress>
<p id="yt-message">{text}</p>
<script>
setInterval(async () => {{
  try {{
    const r = await fetch("?progress", {{cache: "no-store"}});
    const text = await r.text();
    let s;
    try {{ s = JSON.parse(text); }} catch (e) {{ if (r.ok) location.reload(); return; }}
    if (s.marker !== "{MARKER}") {{ if (r.ok) location.reload(); return; }}
    document.body.dataset.state = s.state;
    document.querySelector("progress").value = s.percent;
    document.querySelector("progress").hidden = s.state !== "installing";
    document.getElementById("yt-message").textContent = s.message;
  }} catch (e) {{ /* VS Code starting on this socket: try again */ }}
}}, {int(POLL_SECONDS * 1000)});
</script></body></html>
"""


def progress_json(state: InstallState) -> str:
    return json.dumps({"marker": MARKER, "state": state.state, "percent": state.percent, "message": message(state)})


class Waiting(ThreadingMixIn, UnixStreamServer):
    daemon_threads = True

    def __init__(self, socket: str, prefix: Path):
        self.prefix = prefix
        self.state = install_state(prefix)
        unlink_stale(socket)
        super().__init__(socket, Handler, bind_and_activate=False)
        try:
            self.server_bind()
            os.chmod(socket, 0o600)
            self.server_activate()
        except BaseException:
            self.server_close()
            raise


def unlink_stale(socket: str) -> None:
    """A socket left by an earlier launcher of this server (code-server removes its own too)."""
    try:
        os.unlink(socket)
    except FileNotFoundError:
        pass


class Handler(BaseHTTPRequestHandler):
    server: Waiting  # type: ignore[assignment]

    def address_string(self) -> str:
        return "unix"  # a unix socket's peer has no address

    def do_GET(self) -> None:
        state = self.server.state
        if self.path.endswith("?progress"):
            body, kind = progress_json(state), "application/json"
        else:
            body, kind = progress_page(state), "text/html; charset=utf-8"
        data = body.encode()
        self.send_response(503 if state.state in ("absent", "failed") else 200)
        self.send_header("Content-Type", kind)
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def wait_for_install(socket: str, prefix: Path) -> InstallState:
    """Serve the page on ``socket`` until code-server is installed; returns that state."""
    server = Waiting(socket, prefix)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stop = threading.Event()
    try:
        while server.state.state != "installed":
            stop.wait(POLL_SECONDS)
            server.state = install_state(prefix)
    finally:
        server.shutdown()
        server.server_close()
        unlink_stale(socket)
    return server.state


def code_server_env(environ: Mapping[str, str]) -> dict[str, str]:
    """This server's environment for code-server. ``VSCODE_CLI=1``: VS Code then keeps it as it is
    rather than replacing it with a login shell's (whose /etc/profile resets PATH, losing this
    installation's ``yt`` and ``jupyter``): its terminals get the PATH JupyterLab's have."""
    return {**environ, "VSCODE_CLI": "1"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="the unix socket to listen on")
    parser.add_argument("--prefix", type=Path, required=True, help="where make code-server installs it")
    parser.add_argument("workdir")
    args = parser.parse_args(argv)
    state = install_state(args.prefix)
    if state.state != "installed":
        state = wait_for_install(args.socket, args.prefix)
    assert state.executable is not None
    sys.stdout.flush()
    command = code_server_command(state.executable, args.workdir, args.socket)
    os.execve(command[0], command, code_server_env(os.environ))


if __name__ == "__main__":
    main()
