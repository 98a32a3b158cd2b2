"""Loads the ``yitong_lab`` server extension (enabled by ``jupyter_server_config.d/yitong_lab.json``)."""

from __future__ import annotations

import os
import shutil
from typing import Any

from jupyter_server.utils import url_path_join

from yitong_lab.proxies.tensorboard import JobBoards
from yitong_lab.server.board_proxy import board_handlers
from yitong_lab.server.handlers import default_handlers
from yitong_lab.server.proxy_guard import guard_proxy_handlers
from yitong_lab.server.uploads import upload_handlers


def terminal_settings(terminado: dict[str, Any], environ: dict[str, str]) -> dict[str, Any]:
    """Terminals run the person's shell as a plain interactive shell, not a login shell: a login
    shell reads /etc/profile, which resets PATH and loses this server's environment (the
    platform's Python and ``yt`` first on PATH, YITONG_API_URL's companions), as the notebook's
    kernels and VS Code's terminal keep it. A ``shell_command`` someone configured wins (pure)."""
    if terminado.get("shell_command"):
        return terminado
    shell = environ.get("SHELL") or shutil.which("bash") or shutil.which("sh") or "/bin/sh"
    return {**terminado, "shell_command": [shell]}


def _link_jupyter_server_extension(serverapp) -> None:
    # at link time: jupyter_server_terminals reads the setting when it loads, before this extension
    serverapp.terminado_settings = terminal_settings(dict(serverapp.terminado_settings), dict(os.environ))


def _load_jupyter_server_extension(serverapp) -> None:
    web_app = serverapp.web_app
    base_url = web_app.settings["base_url"]
    web_app.settings["yitong_tensorboards"] = JobBoards(base_url)  # yitong/jobs/<id>/tensorboard
    web_app.add_handlers(
        ".*$",
        [(url_path_join(base_url, route), handler) for route, handler in default_handlers + upload_handlers]
        + [(url_path_join(base_url, route), handler, kwargs) for route, handler, kwargs in board_handlers],
    )
    # jupyter_server_proxy's handlers are there already (extensions load in the order of their names)
    guarded = guard_proxy_handlers(web_app.default_router)
    serverapp.log.info(
        "yitong_lab: /yitong/api/ forwards to the platform API; "
        "/yitong/datasets/uploads takes browser uploads; "
        "/yitong/jobs/<id>/tensorboard opens TensorBoard on a job's outputs; "
        "%d proxy routes reach only this server's own services",
        guarded,
    )


async def _start_jupyter_server_extension(serverapp) -> None:
    # again once every extension has loaded: a proxy route another extension added after this one
    guard_proxy_handlers(serverapp.web_app.default_router)
