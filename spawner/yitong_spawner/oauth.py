"""Logins from an organisation's identity provider: the settings file's `auth` section.

`auth.kind` is `password` (the default: `YitongAuthenticator` and `yitong-passwd`), `generic`
(oauthenticator's `GenericOAuthenticator`: any OpenID Connect or OAuth 2 provider) or `azuread`
(`AzureAdOAuthenticator`: Microsoft Entra ID / Azure AD). With a provider, its groups become the
hub's groups at every login (`manage_groups`), and VCs grant membership by hub group
(`vcs.<vc>.groups`), so the provider decides who is in which VC.

:func:`validate` and :func:`authenticator_config` are pure; :func:`resolve` reads the client
secret file and the provider's OpenID discovery document (called once, at hub start).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

KINDS = ("password", "generic", "azuread")
ENTRY_POINTS = {"password": "yitong", "generic": "generic-oauth", "azuread": "azuread"}
SECTIONS = {"generic": "GenericOAuthenticator", "azuread": "AzureAdOAuthenticator"}
# where oauthenticator keeps the provider's user info in auth_state (`user_auth_state_key`)
USER_KEYS = {"generic": "oauth_user", "azuread": "user"}
COMMON = (
    "kind",
    "client_id",
    "client_secret",
    "client_secret_file",
    "username_claim",
    "scope",
    "groups_claim",
    "allowed_groups",
    "admin_groups",
    "allow_all",
    "login_service",
    "callback_url",
)
KEYS = {
    "password": ("kind",),
    "generic": (*COMMON, "issuer", "authorize_url", "token_url", "userdata_url"),
    "azuread": (*COMMON, "tenant_id"),
}
ENDPOINTS = {
    "authorize_url": "authorization_endpoint",
    "token_url": "token_endpoint",
    "userdata_url": "userinfo_endpoint",
}
DEFAULT_SCOPE = ["openid", "profile", "email"]


class AuthSettingsError(ValueError):
    """A sentence naming the `auth.<key>` that is wrong."""


def _strings(auth: dict[str, Any], key: str) -> list[str]:
    value = auth.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise AuthSettingsError(f"auth.{key} must be a list of names, not {value!r}")
    return list(value)


def validate(auth: Any, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `auth` section checked and normalised; `AuthSettingsError` names the key at fault."""
    if auth is None:
        return {"kind": "password"}
    if not isinstance(auth, dict):
        raise AuthSettingsError(f"auth must be a mapping with a kind ({', '.join(KINDS)}), not {auth!r}")
    kind = auth.get("kind", "password")
    if kind not in KINDS:
        raise AuthSettingsError(f"auth.kind must be one of {', '.join(KINDS)}, not {kind!r}")
    unknown = sorted(str(k) for k in auth if k not in KEYS[kind])
    if unknown:
        raise AuthSettingsError(
            f"auth: unknown key(s) for kind {kind}: {', '.join(unknown)}. Allowed: {', '.join(KEYS[kind])}"
        )
    if kind == "password":
        return {"kind": "password"}
    out: dict[str, Any] = {"kind": kind}
    for key in KEYS[kind]:
        if key in ("kind", "scope", "allowed_groups", "admin_groups", "allow_all"):
            continue
        value = auth.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise AuthSettingsError(f"auth.{key} must be a non-empty string, not {value!r}")
        if value is not None:
            out[key] = value.strip()
    if "client_id" not in out:
        raise AuthSettingsError(f"auth.client_id is required for kind {kind}: the id the provider gave this hub")
    if ("client_secret" in out) == ("client_secret_file" in out):
        raise AuthSettingsError(
            "auth: give exactly one of client_secret_file (a file readable only by the hub; preferred) "
            "or client_secret (inline)"
        )
    if kind == "generic" and "issuer" not in out:
        missing = [k for k in ENDPOINTS if k not in out]
        if missing:
            raise AuthSettingsError(
                f"auth: give issuer (OpenID discovery) or all of authorize_url, token_url, userdata_url;"
                f" missing {', '.join(missing)}"
            )
    if kind == "azuread" and "tenant_id" not in out:
        raise AuthSettingsError("auth.tenant_id is required for kind azuread: your directory (tenant) id")
    out["scope"] = _strings(auth, "scope") or list(DEFAULT_SCOPE)
    out["allowed_groups"] = _strings(auth, "allowed_groups")
    out["admin_groups"] = _strings(auth, "admin_groups")
    allow_all = auth.get("allow_all", False)
    if not isinstance(allow_all, bool):
        raise AuthSettingsError(f"auth.allow_all must be true or false, not {allow_all!r}")
    if not out["allowed_groups"] and not allow_all:
        raise AuthSettingsError(
            "auth: name allowed_groups (the provider's groups whose members may log in), "
            "or set allow_all: true to let everyone the provider knows log in"
        )
    out["allow_all"] = allow_all
    if settings and settings.get("groups"):
        raise AuthSettingsError(
            f"groups: with auth.kind {kind} the provider's groups are the hub's groups (set at every "
            "login); remove the groups section and name the provider's groups in vcs.<vc>.groups"
        )
    return out


def resolve(auth: dict[str, Any], base_dir: str | os.PathLike = ".", get_json: Any = None) -> dict[str, Any]:
    """I/O once at hub start: read `client_secret_file`, fill endpoints from the issuer's discovery."""
    if auth["kind"] == "password":
        return auth
    out = dict(auth)
    if "client_secret_file" in out:
        path = Path(base_dir, os.path.expanduser(out.pop("client_secret_file")))
        try:
            out["client_secret"] = path.read_text().strip()
        except OSError as e:
            raise AuthSettingsError(f"auth.client_secret_file: cannot read {path}: {e.strerror}") from None
        if not out["client_secret"]:
            raise AuthSettingsError(f"auth.client_secret_file: {path} is empty")
    if out.get("issuer") and not all(k in out for k in ENDPOINTS):
        url = out["issuer"].rstrip("/") + "/.well-known/openid-configuration"
        try:
            doc = (get_json or _get_json)(url)
        except Exception as e:
            raise AuthSettingsError(f"auth.issuer: cannot read {url}: {e}") from None
        for key, field in ENDPOINTS.items():
            if key not in out:
                if not isinstance(doc.get(field), str):
                    raise AuthSettingsError(f"auth.issuer: {url} has no {field}; give auth.{key}")
                out[key] = doc[field]
    return out


def _get_json(url: str) -> dict[str, Any]:
    import httpx

    r = httpx.get(url, timeout=10, follow_redirects=True)
    r.raise_for_status()
    return r.json()


def authenticator_config(auth: dict[str, Any], *, public_url: str) -> dict[str, dict[str, Any]]:
    """Pure: `{Class: {trait: value}}` for a resolved `auth` section (`{}` for password logins)."""
    kind = auth["kind"]
    if kind == "password":
        return {}
    if "client_secret" not in auth:
        raise AuthSettingsError(
            "auth.client_secret_file has not been read (load the file with hubconfig.load_settings)"
        )
    traits: dict[str, Any] = {
        "client_id": auth["client_id"],
        "client_secret": auth["client_secret"],
        "oauth_callback_url": auth.get("callback_url") or f"{public_url.rstrip('/')}/hub/oauth_callback",
        "scope": list(auth["scope"]),
        # the provider's groups become hub groups at every login; VCs grant membership by group
        "manage_groups": True,
        "auth_state_groups_key": f"{USER_KEYS[kind]}.{auth.get('groups_claim') or 'groups'}",
        "allowed_groups": set(auth["allowed_groups"]),
        "admin_groups": set(auth["admin_groups"]),
        # explicit: the hub's Authenticator.allow_all (true for password logins) must not leak here
        "allow_all": bool(auth["allow_all"]),
        "allow_existing_users": False,
    }
    if auth.get("username_claim"):
        traits["username_claim"] = auth["username_claim"]
    elif kind == "generic":
        traits["username_claim"] = "preferred_username"
    if auth.get("login_service"):
        traits["login_service"] = auth["login_service"]
    for key in ENDPOINTS:
        if auth.get(key):
            traits[key] = auth[key]
    if kind == "azuread":
        traits["tenant_id"] = auth["tenant_id"]
    return {"JupyterHub": {"authenticator_class": ENTRY_POINTS[kind]}, SECTIONS[kind]: traits}
