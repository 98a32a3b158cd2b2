"""jupyter-server-proxy entries (group ``jupyter_serverproxy_servers``): code-server, TensorBoard.

Each module has one pure ``setup_*()`` returning the ServerProcess config dict; a launcher
entry is offered only when the program is on PATH.
"""

from __future__ import annotations

from pathlib import Path

ICONS = Path(__file__).parent / "icons"


def escape_template(text: str) -> str:
    """Protect braces from jupyter-server-proxy's ``str.format`` of command items."""
    return text.replace("{", "{{").replace("}", "}}")
