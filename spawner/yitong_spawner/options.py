"""User options are hostile input: parse the form, then validate against what the platform offers.

Pure functions over plain values. `user_options` is `{"vc": str, "profile": str, "custom": str}`, all
optional (`custom`: the value of a z2jh profile's unlisted choice, checked by `profile_list.check_custom`);
the same rules apply whether it came from the picker form, `/hub/spawn?profile=vc/name`, the REST
API's JSON body or a saved value naming a VC or profile that no longer exists.
"""

from __future__ import annotations

import copy
from typing import Any

ALLOWED_KEYS = ("vc", "profile", "custom")


class OptionsError(ValueError):
    """A sentence for the user explaining why these options cannot be used."""


def _first(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return value if isinstance(value, str) else ""


def parse_form(form_data: dict[str, Any]) -> dict[str, str]:
    """Form or query data -> user_options. Only the `profile` field ("<vc>/<profile>") is read.

    >>> parse_form({"profile": ["vision/gpu-1"], "_xsrf": ["x"]})
    {'vc': 'vision', 'profile': 'gpu-1'}
    """
    raw = _first(form_data.get("profile")).strip()
    custom = _first(form_data.get("custom")).strip()
    extra = {"custom": custom} if custom else {}
    if not raw:
        return extra
    vc, sep, profile = raw.partition("/")
    if not sep:
        return {"profile": raw, **extra}
    return {"vc": vc, "profile": profile, **extra}


def requested_options(user_options: Any, handler: Any) -> Any:
    """The options this start asked for: `{}` when a REST API start sent none.

    JupyterHub replays the options saved from the last start when `POST /hub/api/users/NAME/server`
    has an empty body (or `{}`, or only a `display_name`). Yitong documents an empty body as "the
    first profile you may start now", so a GPU profile chosen last week is not retried (and
    refused) while the GPU is taken. Form and query starts are unchanged.
    """
    read_body = getattr(handler, "get_server_json_body", None)
    request = getattr(handler, "request", None)
    if read_body is None or getattr(request, "method", "") != "POST":
        return user_options
    try:
        body = read_body()
    except Exception:
        return user_options
    return {} if isinstance(body, dict) and body.get("user_options") is None else user_options


def _names(vc: dict[str, Any]) -> list[str]:
    return [p.get("name") for p in vc.get("profiles", [])]


def _pick_default(vcs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    for vc in vcs:
        for profile in vc.get("profiles", []):
            if profile.get("available", True):
                return vc, profile
    reasons = [f"{p.get('name')}: {p.get('reason')}" for vc in vcs for p in vc.get("profiles", []) if p.get("reason")]
    if not any(vc.get("profiles") for vc in vcs):
        raise OptionsError("None of your VCs offers a server profile. Ask an administrator to add one.")
    raise OptionsError("No server profile is available right now (" + "; ".join(reasons) + ").")


def validate_options(user_options: Any, spawn_options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return deep copies of (vc, profile) models chosen by `user_options`, or raise OptionsError.

    `spawn_options` is the platform's `GET /spawn-options` answer for this user.
    Availability is not enforced here: the allocation (one transaction in the service) decides.
    """
    if user_options is None:
        user_options = {}
    if not isinstance(user_options, dict):
        raise OptionsError("Server options must be a JSON object with the keys vc, profile and custom.")
    unknown = sorted(str(k) for k in user_options if k not in ALLOWED_KEYS)
    if unknown:
        raise OptionsError(f"Unknown server option(s): {', '.join(unknown)}. Allowed: vc, profile, custom.")
    for key in ALLOWED_KEYS:
        if key in user_options and not isinstance(user_options[key], str):
            raise OptionsError(f"Server option {key} must be a string.")
    vcs: list[dict[str, Any]] = list(spawn_options.get("vcs") or [])
    if not vcs:
        raise OptionsError(
            "You are not a member of any virtual cluster (VC), so no server can be started. "
            "Ask an administrator to add you to a VC."
        )
    vc_name = user_options.get("vc") or ""
    profile_name = user_options.get("profile") or ""
    if vc_name:
        matches = [vc for vc in vcs if vc.get("name") == vc_name]
        if not matches:
            raise OptionsError(f"VC {vc_name} does not exist or you are not a member of it.")
        vcs = matches
    if not profile_name:
        vc, profile = _pick_default(vcs)
        return copy.deepcopy(vc), copy.deepcopy(profile)
    offering = [vc for vc in vcs if profile_name in _names(vc)]
    if not offering:
        where = f"VC {vc_name}" if vc_name else "any of your VCs"
        raise OptionsError(f"Profile {profile_name} is not offered by {where}.")
    # Prefer a VC where the profile is available now; otherwise the first (the allocation explains).
    for vc in offering:
        for profile in vc["profiles"]:
            if profile.get("name") == profile_name and profile.get("available", True):
                return copy.deepcopy(vc), copy.deepcopy(profile)
    vc = offering[0]
    profile = next(p for p in vc["profiles"] if p.get("name") == profile_name)
    return copy.deepcopy(vc), copy.deepcopy(profile)
