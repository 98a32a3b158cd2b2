"""Add a person in one step: the hub user, the password and the groups (VC membership).

`yitong-passwd add alice --generate --vc default` (:func:`yitong_spawner.passwords.main`):

- the password goes to `<data dir>/secrets/passwords.json` (read at every login);
- with the hub running, the user and the group memberships are made through the hub's REST API
  with the platform service's token (`<data dir>/secrets/service-token`; its role has
  `admin:users` and `admin:groups`); a VC's group is asked of the platform service;
- with the hub stopped, they are recorded in `<data dir>/secrets/people-pending.json`, which
  `jupyterhub_config.py` takes at the next start (:func:`take_pending`): the hub makes the
  users (`Authenticator.allowed_users`) and the memberships (`load_groups`) as it starts.

A VC grants membership by hub group (`vcs.<vc>.groups`): `--vc V` adds the person to V's first
group. The name rules are JupyterHub's own (lower-cased; no `/`, not empty, not only dots).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from .running import Hub

SERVICE_API = "/services/yitong/api/v1"
PENDING = "people-pending.json"


class Refused(Exception):
    """A sentence for the admin; nothing was changed."""


def normalize_name(name: str) -> str:
    """JupyterHub's normalised user name, or :class:`Refused` naming the rule it breaks."""
    from jupyterhub.auth import Authenticator

    auth = Authenticator()
    normal = auth.normalize_username(name)
    if not auth.validate_username(normal):
        raise Refused(
            f"{name!r} is not a valid JupyterHub user name: it must not be empty, only dots, contain '/' "
            "or start or end with a space"
        )
    return normal


def pending_file(data_dir: str) -> str:
    return os.path.join(os.path.abspath(data_dir), "secrets", PENDING)


def record_pending(data_dir: str, name: str, groups: list[str]) -> None:
    """Remember `name` and their groups for the hub's next start (merged with what is there)."""
    from .password_store import atomic_json

    path = pending_file(data_dir)
    people = read_pending(path)
    people[name] = sorted(set(people.get(name, [])) | set(groups))
    atomic_json(path, {"people": people})


def read_pending(path: str) -> dict[str, list[str]]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise Refused(f"{path} cannot be read ({e}): remove it or fix it") from None
    people = data.get("people") if isinstance(data, dict) else None
    return {str(k): [str(g) for g in v] for k, v in (people or {}).items()}


def take_pending(data_dir: str) -> dict[str, list[str]]:
    """The people recorded while the hub was stopped, taken once: the file is renamed to
    `people-pending.json.taken` (kept for the record) so a later start does not undo a
    membership an admin removed since."""
    path = pending_file(data_dir)
    people = read_pending(path)
    if people:
        os.replace(path, path + ".taken")
    return people


def merge_pending(cfg: dict[str, dict[str, Any]], people: dict[str, list[str]]) -> None:
    """Pure: the hub makes `people` users and members of their groups as it starts."""
    hub = cfg["JupyterHub"]
    groups = hub.setdefault("load_groups", {})
    for name, names in people.items():
        for group in names:
            members = groups.setdefault(group, {"users": []}).setdefault("users", [])
            if name not in members:
                members.append(name)
    auth = cfg.setdefault("Authenticator", {})
    auth["allowed_users"] = set(auth.get("allowed_users") or ()) | set(people)


def vc_groups(settings: dict[str, Any], vc: str, hub: Hub | None, token: str | None, service_port: int) -> list[str]:
    """VC `vc`'s groups: asked of the running platform service (the console may have changed
    them), else from the settings file."""
    if hub is not None and token:
        try:
            r = httpx.get(
                f"http://127.0.0.1:{service_port}{SERVICE_API}/vcs/{quote(vc, safe='')}",
                headers={"Authorization": f"token {token}"},
                timeout=30,
            )
        except httpx.HTTPError as e:
            raise Refused(f"the platform service at 127.0.0.1:{service_port} does not answer ({e})") from None
        if r.status_code == 404:
            raise Refused(f"there is no VC {vc}")
        if r.status_code != 200:
            raise Refused(f"the platform service answered {r.status_code} for VC {vc}: {r.text[:200]}")
        groups = list(r.json().get("groups") or [])
    else:
        spec = (settings.get("vcs") or {}).get(vc)
        if spec is None:
            raise Refused(f"there is no VC {vc} in the settings file (the platform is not running)")
        groups = list(spec.get("groups") or [])
    if not groups:
        raise Refused(f"VC {vc} grants membership to no group: give it one (console or settings), or use --group")
    return groups


class HubAPI:
    """The few hub REST calls adding a person takes, with the service's token."""

    def __init__(self, api_url: str, token: str) -> None:
        self.client = httpx.Client(base_url=api_url, headers={"Authorization": f"token {token}"}, timeout=30)

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            r = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as e:
            raise Refused(f"the hub at {self.client.base_url} does not answer ({e})") from None
        if r.status_code == 403:
            raise Refused(
                f"the hub refused {method} {path} to the service token: restart the hub (`make run`) "
                "so the service's role has admin:users and admin:groups"
            )
        return r

    def ensure_user(self, name: str) -> bool:
        """Make the hub user; True if made now, False if there already."""
        r = self._call("POST", f"/users/{quote(name, safe='')}")
        if r.status_code == 201:
            return True
        if r.status_code == 409:
            return False
        raise Refused(f"the hub did not make user {name}: {r.status_code} {_message(r)}")

    def add_to_group(self, group: str, name: str) -> None:
        path = f"/groups/{quote(group, safe='')}"
        r = self._call("POST", f"{path}/users", json={"users": [name]})
        if r.status_code == 404:  # a VC's group nobody has joined yet
            made = self._call("POST", path)
            if made.status_code not in (201, 409):
                raise Refused(f"the hub did not make group {group}: {made.status_code} {_message(made)}")
            r = self._call("POST", f"{path}/users", json={"users": [name]})
        if r.status_code != 200:
            raise Refused(f"the hub did not add {name} to group {group}: {r.status_code} {_message(r)}")

    def close(self) -> None:
        self.client.close()


def _message(r: httpx.Response) -> str:
    try:
        return str(r.json().get("message") or r.text[:200])
    except ValueError:
        return r.text[:200]


def hub_api_url(settings: dict[str, Any]) -> str:
    """The hub's own API on loopback (`hub.internal_port`, as `hubconfig.hub_config` sets it)."""
    return f"http://127.0.0.1:{int((settings.get('hub') or {}).get('internal_port', 8081))}/hub/api"


def service_token(data_dir: str) -> str | None:
    try:
        return Path(data_dir, "secrets", "service-token").read_text().strip() or None
    except OSError:
        return None
