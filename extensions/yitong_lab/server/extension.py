"""Loads the ``yitong_lab`` server extension (enabled by ``jupyter_server_config.d/yitong_lab.json``)."""

from __future__ import annotations

from jupyter_server.utils import url_path_join

from yitong_lab.proxies.tensorboard import JobBoards
from yitong_lab.server.handlers import default_handlers
from yitong_lab.server.uploads import upload_handlers


def _load_jupyter_server_extension(serverapp) -> None:
    web_app = serverapp.web_app
    base_url = web_app.settings["base_url"]
    web_app.settings["yitong_tensorboards"] = JobBoards(base_url)  # yitong/jobs/<id>/tensorboard
    web_app.add_handlers(
        ".*$", [(url_path_join(base_url, route), handler) for route, handler in default_handlers + upload_handlers]
    )
    serverapp.log.info(
        "yitong_lab: /yitong/api/ forwards to the platform API; "
        "/yitong/datasets/uploads takes browser uploads; "
        "/yitong/jobs/<id>/tensorboard opens TensorBoard on a job's outputs"
    )
