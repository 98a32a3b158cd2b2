"""jupyter-server-proxy entries (group ``jupyter_serverproxy_servers``): code-server, TensorBoard.

Each module has one pure ``setup_*()`` returning the ServerProcess config dict; a launcher
entry is offered only when the program is there. Each listens on a unix socket in this
server's private folder (:func:`private_dir`), never on a TCP port: on a machine shared by
several people only the server's account can connect, so the hub's login (through the
server's proxy) is the only way in. docs/security.md, "Per-person web services".
"""

from __future__ import annotations

from pathlib import Path

ICONS = Path(__file__).parent / "icons"


def escape_template(text: str) -> str:
    """Protect braces from jupyter-server-proxy's ``str.format`` of command items."""
    return text.replace("{", "{{").replace("}", "}}")


_PRIVATE: list[Path] = []


def private_dir() -> Path:
    """This server's folder for its services' unix sockets: made once per process by
    ``mkdtemp`` (mode 0700, owned by the server's account, under ``$TMPDIR`` or /tmp), removed at
    exit. Another account can neither list it nor connect to a socket in it (EACCES)."""
    if not _PRIVATE:
        import atexit
        import shutil
        import tempfile

        made = Path(tempfile.mkdtemp(prefix="yt-web-"))
        if len(str(made)) > 80:  # a unix socket's path has 107 bytes at most
            made.rmdir()
            made = Path(tempfile.mkdtemp(prefix="yt-web-", dir="/tmp"))
        made.chmod(0o700)
        atexit.register(shutil.rmtree, made, True)
        _PRIVATE.append(made)
    return _PRIVATE[0]


def socket_path(name: str) -> str:
    """``<private_dir>/<name>.sock``."""
    return str(private_dir() / f"{name}.sock")
