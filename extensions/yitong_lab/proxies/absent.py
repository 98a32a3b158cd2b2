"""What a proxy entry runs when its program is not installed:
``python -m yitong_lab.proxies.absent --socket PATH SENTENCE`` answers every request on the
unix socket PATH (mode 0600) with 503 and that sentence, so ``<base_url><name>/`` says what is missing
instead of jupyter-server-proxy's 500 from a FileNotFoundError.
"""

from __future__ import annotations

import argparse
import html
import os
import sys
from http.server import BaseHTTPRequestHandler
from socketserver import UnixStreamServer

from yitong_lab.proxies import escape_template


def absent_command(sentence: str, python: str = sys.executable) -> list[str]:
    return [python, "-m", "yitong_lab.proxies.absent", "--socket", "{unix_socket}", escape_template(sentence)]


def absent_page(sentence: str) -> bytes:
    text = html.escape(sentence)
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>Not installed</title></head>'
        f'<body style="font:15px system-ui,sans-serif;margin:3em auto;max-width:40em">'
        f"<p>{text}</p></body></html>\n"
    ).encode()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="the unix socket to listen on")
    parser.add_argument("sentence")
    args = parser.parse_args(argv)
    body = absent_page(args.sentence)

    class Handler(BaseHTTPRequestHandler):
        def address_string(self) -> str:
            return "unix"

        def do_GET(self) -> None:
            self.send_response(503)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server = UnixStreamServer(args.socket, Handler, bind_and_activate=False)
    server.server_bind()
    os.chmod(args.socket, 0o600)
    server.server_activate()
    server.serve_forever()


if __name__ == "__main__":
    main()
