"""A person's SSH public keys (``/me/ssh-keys``): what the SSH gateway lets them in with."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from ..core.limits import MAX_ID
from ..ssh import keys
from ..ssh.schemas import SSHKeyIn, SSHKeyOut
from .common import Caller, Ctx, in_thread

router = APIRouter(prefix="/me/ssh-keys", tags=["ssh"])
KeyId = Annotated[int, Path(ge=1, le=MAX_ID, description="a key's id")]


@router.get("", response_model=list[SSHKeyOut])
async def list_keys(caller: Caller, ctx: Ctx) -> list[dict]:
    """The caller's public keys, oldest first."""

    def work() -> list[dict]:
        with ctx.db.session() as s:
            return [keys.as_dict(k) for k in keys.list_keys(s, caller.name)]

    return await in_thread(work)


@router.post("", status_code=201, response_model=SSHKeyOut)
async def add_key(body: SSHKeyIn, caller: Caller, ctx: Ctx) -> dict:
    """Add one OpenSSH public key (ed25519, ecdsa, rsa >= 2048 bits); 422 for anything else,
    409 for a key already added or one key too many (``ssh.max_keys``)."""

    def work() -> dict:
        with ctx.db.writing() as s:
            return keys.as_dict(keys.add_key(s, caller.name, body.key, ctx.settings.ssh.max_keys))

    return await in_thread(work)


@router.delete("/{key_id}", status_code=204)
async def remove_key(key_id: KeyId, caller: Caller, ctx: Ctx) -> Response:
    """Remove one of the caller's keys (404 for anyone else's)."""

    def work() -> None:
        with ctx.db.writing() as s:
            keys.remove_key(s, caller.name, key_id)

    await in_thread(work)
    return Response(status_code=204)
