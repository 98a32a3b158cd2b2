"""Yitong in the user's server: SDK, ``yt`` CLI, ``%yt`` magic, server extension, lab panel.

Importing this package must stay instant (a kernel loads it with ``%load_ext yitong_lab``):
no third-party imports here; everything heavy is imported where it is used.
"""

from __future__ import annotations

__version__ = "0.1.0"


def load_ipython_extension(ipython):  # noqa: ANN001
    """``%load_ext yitong_lab`` (or ``--ext=yitong_lab``): register the ``%yt`` line magic."""
    from yitong_lab.magics import register

    register(ipython)


def _jupyter_server_extension_points():
    return [{"module": "yitong_lab.server.extension"}]


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "yitong-lab"}]
