"""Identity from JupyterHub: a token header (``token``/``Bearer``) or the HubOAuth cookie.

The token is identified by the hub (``GET /hub/api/user`` with that token) and must carry
``access:services!service=<name>``; a user's admin flag and groups come from that answer when
the token may read them, else from ``GET /hub/api/users/{name}`` with the service's own token. The service's own token is trusted
to act for any user. Cookies are only honoured for GET/HEAD (no XSRF on mutations).
"""

from __future__ import annotations

import hmac
import re

from fastapi import Depends, HTTPException, Request
from jupyterhub.services.auth import check_scopes
from tornado.web import decode_signed_value

from .authz import Identity, Person, act_for_refusal
from .context import Context, context

#: endpoint keys (``models/endpoint_keys.py``) start so; they are no hub tokens and never go to the hub
ENDPOINT_KEY_PREFIX = "yte_"
_HEADER = re.compile(r"^(?:token|bearer)\s+(\S+)\s*$", re.IGNORECASE)


def request_token(request: Request, ctx: Context) -> str | None:
    header = request.headers.get("authorization", "")
    match = _HEADER.match(header)
    if match:
        return match.group(1)
    if request.method in ("GET", "HEAD"):
        signed = request.cookies.get(ctx.cookie_name)
        if signed and ctx.cookie_secret:
            value = decode_signed_value(ctx.cookie_secret, ctx.cookie_name, signed, max_age_days=1)
            if value:
                return value.decode()
    return None


async def identify(request: Request, ctx: Context) -> Identity | None:
    """The caller, or None when the request carries no valid token."""
    token = request_token(request, ctx)
    if not token:
        return None
    if ctx.hub.token and hmac.compare_digest(token.encode(), ctx.hub.token.encode()):
        return Identity(kind="service", name=ctx.service_name, trusted=True)
    if token.startswith(ENDPOINT_KEY_PREFIX):
        return None
    model = await ctx.hub.identify(token)
    if model is None:
        return None
    if not check_scopes(set(ctx.access_scopes), set(model.get("scopes") or [])):
        raise HTTPException(
            403,
            f"this token lacks the scope access:services!service={ctx.service_name}"
            " (give it to users in the hub's roles and Spawner.server_token_scopes)",
        )
    if model.get("kind") == "service":
        return Identity(kind="service", name=model["name"])
    if "groups" in model and "admin" in model:
        # the hub already said (the token may read its owner's groups): no second request
        person = Person(name=model["name"], admin=bool(model["admin"]), groups=tuple(sorted(model["groups"] or ())))
    else:
        person = await lookup(ctx, model["name"])
    return Identity(kind="user", name=person.name, admin=person.admin, groups=person.groups)


async def lookup(ctx: Context, name: str) -> Person:
    """A hub user by name (404 when the hub does not know them)."""
    model = await ctx.hub.user(name)
    if model is None:
        raise HTTPException(404, f"JupyterHub has no user {name}")
    return Person(name=model["name"], admin=bool(model.get("admin")), groups=tuple(sorted(model.get("groups") or ())))


async def current_identity(request: Request, ctx: Context = Depends(context)) -> Identity:
    """FastAPI dependency: 401 without a valid token or cookie."""
    identity = await identify(request, ctx)
    if identity is None:
        raise HTTPException(
            401,
            "authentication required: send 'Authorization: token <JupyterHub token>'",
            headers={"WWW-Authenticate": "token"},
        )
    return identity


async def person_for(ctx: Context, caller: Identity, name: str | None) -> Person:
    """The user a request is about: the caller, or ``name`` when a privileged caller names one.

    The acting user is always the authenticated one. Only this service's own token (the hub's
    spawner) and admins may name another user; for anyone else naming a user other than
    themselves is refused without looking the name up, so the answer never tells which users
    exist. An admin acting for someone else is written to the audit log by the route.
    """
    if caller.kind == "user" and name in (None, caller.name):
        return Person(name=caller.name, admin=caller.admin, groups=caller.groups)
    if name is None:
        raise HTTPException(422, "a service must say which user: pass user=NAME")
    refused = act_for_refusal(caller, name)
    if refused:
        raise HTTPException(403, refused)
    return await lookup(ctx, name)
