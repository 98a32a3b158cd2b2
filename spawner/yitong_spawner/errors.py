"""Errors JupyterHub shows to the user: on the spawn-pending page and in REST API responses."""

from __future__ import annotations

from tornado import web

try:  # JupyterHub >= 6
    from jupyterhub.spawner import SpawnException
except ImportError:  # pragma: no cover
    SpawnException = None


def spawn_error(message: str, *, reason: str, status: int = 400) -> web.HTTPError:
    """A refusal with the platform's (or our) sentence; status 0 (unreachable) becomes 503."""
    status = status if 400 <= status < 600 else 503
    if SpawnException is not None:
        error = SpawnException(message, reason=reason, status_code=status)
        # what the hub shows (progress "Spawn failed: ...", the not-running page): the sentence,
        # not str(error), which reads "409 SpawnException(reason=quota): ..."
        error.jupyterhub_message = message
        return error
    error = _Refusal(status, message.replace("%", "%%"))  # pragma: no cover
    error.jupyterhub_message = message  # pragma: no cover  (what the hub shows)
    return error  # pragma: no cover


class _Refusal(web.HTTPError):
    """A refusal on a JupyterHub without SpawnException, with the sentence the hub shows."""

    jupyterhub_message: str
