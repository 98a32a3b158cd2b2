"""The scopes a person's notebook server holds: one list, used by the hub's ``server`` role
(``hubconfig``) and by ``YitongSpawner.server_token_scopes``."""

from __future__ import annotations


def server_scopes(service: str) -> list[str]:
    """JupyterHub's ``server`` role, the platform service (the person must hold it too: see the
    README), and the owner's name and groups (the platform identifies callers through the hub)."""
    return [
        "users:activity!user",
        "access:servers!server",
        f"access:services!service={service}",
        "read:users:name!user",
        "read:users:groups!user",
    ]
