"""Yitong in the user's server: SDK, ``yt`` CLI, ``%yt`` magic, server extension, lab panel.

Importing this package must stay instant (a kernel loads it with ``%load_ext yitong_lab``):
no third-party imports here; everything heavy is imported where it is used.
"""

from __future__ import annotations

__version__ = "0.1.0"


def log_metrics(metrics=None, /, **more):
    """Record metrics in this job's run (``log_metrics(loss=0.1)`` or ``log_metrics({"loss": 0.1})``);
    outside a job: a warning, nothing recorded. See :mod:`yitong_lab.metrics`."""
    from yitong_lab.metrics import log_metrics as log

    return log(metrics, **more)


def load_ipython_extension(ipython):
    """``%load_ext yitong_lab`` (or ``--ext=yitong_lab``): register the ``%yt`` line and ``%%yt``
    cell magic."""
    from yitong_lab.magics import register

    register(ipython)


def _jupyter_server_extension_points():
    return [{"module": "yitong_lab.server.extension"}]


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "yitong-lab"}]
