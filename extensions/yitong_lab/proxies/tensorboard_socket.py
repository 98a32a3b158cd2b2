"""TensorBoard on a unix socket: ``python -m yitong_lab.proxies.tensorboard_socket --socket PATH
TENSORBOARD_FLAGS...``.

TensorBoard has no socket flag: this is its own ``tensorboard.main.run_main`` (the same plugins,
flags and WSGI app) with another server class (``program.TensorBoard``'s ``server_class`` hook):
werkzeug's threaded server on ``unix://PATH`` (mode 0600; the folder is the server's 0700 one),
HTTP/1.1 as TensorBoard's own. ``--host``, ``--port`` and ``--bind_all`` are ignored. Always
``--load_fast=false``: the fast loader is a separate data server that listens on a localhost
TCP port without a login, where any account could read the scalars. TensorBoard's info file
(``tensorboard.manager``, read by ``%tensorboard``) goes in the socket's folder, not /tmp.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any


def tensorboard_argv(flags: list[str]) -> list[str]:
    """TensorBoard's own argv: the given flags, then ``--load_fast=false`` (it wins, last)."""
    return ["tensorboard", *flags, "--load_fast=false"]


def make_server_class(path: str) -> Any:
    from tensorboard import program
    from werkzeug import serving

    class Handler(serving.WSGIRequestHandler):
        protocol_version = "HTTP/1.1"  # as TensorBoard's own handler: keep-alive, one thread per client

    class UnixSocketServer(serving.ThreadedWSGIServer, program.TensorBoardServer):
        daemon_threads = True

        def __init__(self, wsgi_app: Any, flags: Any):
            self._prefix = flags.path_prefix.rstrip("/")
            super().__init__(f"unix://{path}", 0, wsgi_app, Handler)
            os.chmod(path, 0o600)

        def get_url(self) -> str:
            return f"http://localhost:0{self._prefix}/"  # TensorBoard's info file wants a port

        def print_serving_message(self) -> None:
            sys.stderr.write(f"TensorBoard on unix socket {path} at {self._prefix or '/'}\n")
            sys.stderr.flush()

    return UnixSocketServer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="the unix socket to listen on")
    args, flags = parser.parse_known_args(argv)
    tempfile.tempdir = os.path.dirname(os.path.abspath(args.socket))  # TensorBoard's info file

    from absl import app
    from tensorboard import default, main_lib, program
    from tensorboard.plugins import base_plugin

    sys.argv = tensorboard_argv(flags)
    main_lib.global_init()
    board = program.TensorBoard(plugins=default.get_plugins(), server_class=make_server_class(args.socket))
    try:
        app.run(board.main, flags_parser=board.configure)
    except base_plugin.FlagsError as error:
        print(f"Error: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
