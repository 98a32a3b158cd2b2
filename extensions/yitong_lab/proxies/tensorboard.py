"""TensorBoard behind ``<base_url>tensorboard/``.

TensorBoard builds absolute links from ``--path_prefix``, so the proxy passes the absolute
URL (``absolute_url: True``) and the prefix is ``{base_url}tensorboard``. It listens on
127.0.0.1 only (``--host``; ``--bind_all`` is a plain on/off switch and stays off).
Settings: ``YITONG_TB_LOGDIR`` (default: home).
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from yitong_lab.proxies import ICONS, escape_template

NAME = "tensorboard"


def tensorboard_command(executable: str, logdir: str) -> list[str]:
    return [
        executable,
        "--logdir", escape_template(logdir),
        "--port", "{port}",
        "--host", "127.0.0.1",
        "--path_prefix", "{base_url}" + NAME,
        "--reload_interval", "15",
    ]


def setup_tensorboard() -> dict[str, Any]:
    executable = shutil.which("tensorboard")
    logdir = os.path.expanduser(os.environ.get("YITONG_TB_LOGDIR") or "~")
    return {
        "command": tensorboard_command(executable or "tensorboard", logdir),
        "absolute_url": True,
        "timeout": 60,
        "new_browser_tab": True,
        "launcher_entry": {
            "enabled": executable is not None,
            "title": "TensorBoard",
            "path_info": NAME + "/",
            "icon_path": str(ICONS / "tensorboard.svg"),
            "category": "Other",
        },
    }
