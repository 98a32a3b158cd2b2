"""``code-server`` (VS Code in the browser) behind ``<base_url>code-server/``.

code-server serves relative URLs, so the default path rewriting to ``/`` works
(no ``absolute_url``). Settings: ``YITONG_CODE_SERVER_WORKDIR`` (default: home).
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from yitong_lab.proxies import ICONS, escape_template


def code_server_command(executable: str, workdir: str) -> list[str]:
    return [
        executable,
        "--auth",
        "none",
        "--bind-addr",
        "127.0.0.1:{port}",
        "--disable-telemetry",
        "--disable-update-check",
        escape_template(workdir),
    ]


def setup_code_server() -> dict[str, Any]:
    executable = shutil.which("code-server")
    workdir = os.environ.get("YITONG_CODE_SERVER_WORKDIR") or os.path.expanduser("~")
    return {
        "command": code_server_command(executable or "code-server", workdir),
        "timeout": 30,
        "new_browser_tab": True,
        "launcher_entry": {
            "enabled": executable is not None,
            "title": "VS Code",
            "icon_path": str(ICONS / "code-server.svg"),
            "category": "Other",
        },
    }
