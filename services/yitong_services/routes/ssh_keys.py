"""A person's SSH public keys (``/me/ssh-keys``): what the SSH gateway lets them in with; and
where the gateway is (``/ssh``)."""

from __future__ import annotations

import socket
from typing import Annotated

from fastapi import APIRouter, Path, Response

from ..core.limits import MAX_ID
from ..ssh import keys
from ..ssh.hostkey import host_key_path
from ..ssh.schemas import SSHInfo, SSHKeyIn, SSHKeyOut
from .common import Caller, Ctx

router = APIRouter(tags=["ssh"])
KeyId = Annotated[int, Path(ge=1, le=MAX_ID, description="a key's id")]


@router.get("/me/ssh-keys", response_model=list[SSHKeyOut])
def list_keys(caller: Caller, ctx: Ctx) -> list[dict]:
    """The caller's public keys, oldest first."""
    with ctx.db.session() as s:
        return [keys.as_dict(k) for k in keys.list_keys(s, caller.name)]


@router.post("/me/ssh-keys", status_code=201, response_model=SSHKeyOut)
def add_key(body: SSHKeyIn, caller: Caller, ctx: Ctx) -> dict:
    """Add one OpenSSH public key (ed25519, ecdsa, rsa >= 2048 bits); 422 for anything else,
    409 for a key already added or one key too many (``ssh.max_keys``)."""
    with ctx.db.writing() as s:
        return keys.as_dict(keys.add_key(s, caller.name, body.key, ctx.settings.ssh.max_keys))


@router.delete("/me/ssh-keys/{key_id}", status_code=204)
def remove_key(key_id: KeyId, caller: Caller, ctx: Ctx) -> Response:
    """Remove one of the caller's keys (404 for anyone else's)."""
    with ctx.db.writing() as s:
        keys.remove_key(s, caller.name, key_id)
    return Response(status_code=204)


@router.get("/ssh", response_model=SSHInfo)
def ssh_info(caller: Caller, ctx: Ctx) -> dict:
    """Where the SSH gateway listens and its host key (what `yt ssh` needs; a file read and
    maybe a name lookup: a plain route, in the thread pool)."""
    ssh = ctx.settings.ssh
    try:
        key = " ".join(host_key_path(ctx.settings.data_dir).with_suffix(".pub").read_text().split()[:2])
    except OSError:
        key = ""
    host = ssh.connect_host(socket.getfqdn)
    return {
        "enabled": bool(ssh.port),
        "host": host,
        "port": ssh.port,
        "host_key": key if ssh.port else "",
        "login": caller.name,
    }
