"""Browser login through the hub's OAuth (``<prefix>oauth_callback``), via ``HubOAuth``.

The access token lands in a signed, HttpOnly cookie named after the OAuth client; it is only
honoured for GET/HEAD (see ``auth.request_token``), so no XSRF token is needed.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse
from jupyterhub.services.auth import HubOAuth
from tornado.web import create_signed_value

from .context import Context, get_context
from .errors import Refusal

STATE_COOKIE = "yitong-oauth-state"
router = APIRouter(include_in_schema=False)


def cookie_secret(data_dir: Path) -> bytes:
    """A per-installation secret in ``<data_dir>/secrets/yitong_cookie_secret`` (created 0600)."""
    path = data_dir / "secrets" / "yitong_cookie_secret"
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(32))
    return path.read_text().strip().encode()


def hub_oauth(ctx: Context) -> HubOAuth:
    return HubOAuth(
        api_url=ctx.hub.api_url,
        api_token=ctx.hub.token,
        oauth_client_id=ctx.oauth_client_id,
        base_url=ctx.prefix,
        cache_max_age=2,
    )


def login_redirect(request: Request, ctx: Context, oauth: HubOAuth) -> RedirectResponse:
    """Send a browser to the hub's authorize page, remembering where it was going."""
    state = oauth.generate_state(next_url=str(request.url.path))
    query = urlencode(
        {
            "client_id": oauth.oauth_client_id,
            "redirect_uri": oauth.oauth_redirect_uri,
            "response_type": "code",
            "state": state,
        }
    )
    response = RedirectResponse(f"{oauth.oauth_authorization_url}?{query}", status_code=302)
    response.set_cookie(STATE_COOKIE, state, path=ctx.prefix, httponly=True, samesite="lax", max_age=600)
    return response


@router.get("/oauth_callback")
async def oauth_callback(request: Request, ctx: Context = Depends(get_context)) -> RedirectResponse:
    code = request.query_params.get("code")
    state = request.query_params.get("state", "")
    if not code:
        raise Refusal(400, "the OAuth callback needs a code")
    if not state or request.cookies.get(STATE_COOKIE) != state:
        raise Refusal(400, "OAuth state does not match: start again from the admin page")
    oauth: HubOAuth = request.app.state.oauth
    next_url = oauth.get_next_url(state) or f"{ctx.prefix}admin"
    oauth.clear_oauth_state(state)
    if not next_url.startswith(ctx.prefix):
        next_url = f"{ctx.prefix}admin"
    token = await oauth.token_for_code(code, sync=False)
    response = RedirectResponse(next_url, status_code=302)
    signed = create_signed_value(ctx.cookie_secret, ctx.cookie_name, token).decode()
    response.set_cookie(ctx.cookie_name, signed, path=ctx.prefix, httponly=True, samesite="lax")
    response.delete_cookie(STATE_COOKIE, path=ctx.prefix)
    return response
