"""The gateway's host key: generated once under the data directory (``ssh/ssh_host_ed25519_key``,
0600 in a 0700 directory), with its ``.pub`` beside it for people's ``known_hosts``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncssh

NAME = "ssh_host_ed25519_key"


def host_key_path(data_dir: Path) -> Path:
    return Path(data_dir).absolute() / "ssh" / NAME


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def load_or_create(data_dir: Path) -> asyncssh.SSHKey:
    """The host key (created on first call). Blocking."""
    import asyncssh

    path = host_key_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    if path.exists():
        os.chmod(path, 0o600)
        return asyncssh.read_private_key(str(path))
    key = asyncssh.generate_private_key("ssh-ed25519", comment="yitong-ssh-gateway")
    _write(path.with_name(NAME + ".pub"), key.export_public_key(), 0o644)
    _write(path, key.export_private_key(), 0o600)
    return key
