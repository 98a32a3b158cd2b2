"""Backend spawner classes and how overrides are applied to them.

`local`: `YitongLocalProcessSpawner` (home under `<data_dir>/home/<user>`; in multi-user mode it runs
as the system account the platform service named in `GET /spawn-options`, see docs/security.md).
`kubernetes`: `kubespawner.KubeSpawner`. `slurm`: `yitong_spawner.slurm.YitongSlurmSpawner`.
Imported lazily so a hub without kubespawner/batchspawner still loads.
"""

from __future__ import annotations

import copy
import os
from importlib.metadata import entry_points
from typing import Any

from jupyterhub.spawner import SimpleLocalProcessSpawner, Spawner
from traitlets import Dict

GROUP = "yitong.spawner_backends"  # entry points: name -> spawner class, as the job backends' yitong.backends
EXTRAS = {
    "kubernetes": "jupyterhub-kubespawner (yitong-spawner[kubernetes])",
    "slurm": "batchspawner (yitong-spawner[slurm])",
}


def resolve_backend(name: str) -> type[Spawner]:
    """A backend's spawner class by entry-point name ('local' | 'kubernetes' | 'slurm', or a
    plugin's), as JupyterHub resolves spawners: ImportError names the missing extra, an unknown
    name lists the known ones."""
    found = {e.name: e for e in entry_points(group=GROUP)}
    if name not in found:
        raise ValueError(f"no spawner backend {name!r}: known are {', '.join(sorted(found))}")
    try:
        return found[name].load()
    except ImportError as e:
        raise ImportError(f"backend {name!r} needs {EXTRAS.get(name, found[name].value)} installed: {e}") from e


def apply_overrides(spawner: Spawner, overrides: dict[str, Any]) -> None:
    """Set traits on a fresh child spawner from a per-spawn deep copy.

    Dicts are merged over the configured value, lists are appended to it, anything else
    replaces it, so deployment config (e.g. extra node selectors) and the profile combine and
    nothing from one spawn leaks into the next.
    """
    for name, value in copy.deepcopy(overrides).items():
        if not spawner.has_trait(name):
            spawner.log.warning("%s has no trait %s; ignoring the override", type(spawner).__name__, name)
            continue
        current = getattr(spawner, name)
        if isinstance(value, dict) and isinstance(current, dict):
            value = {**copy.deepcopy(current), **value}
        elif isinstance(value, list) and isinstance(current, list):
            value = copy.deepcopy(current) + value
        setattr(spawner, name, value)


# Traits the hub sets on the spawner it knows (this one) that the child must see too.
HUB_SET_TRAITS = ("api_token", "admin_access", "cert_paths", "oauth_client_allowed_scopes", "port")
# Constructor arguments JupyterHub passes (jupyterhub.user.User._new_spawner), forwarded to the child.
CONSTRUCTOR_TRAITS = (
    "user",
    "orm_spawner",
    "hub",
    "authenticator",
    "config",
    "proxy_spec",
    "_deprecated_db_session",
    "oauth_client_id",
    "cookie_options",
    "cookie_host_prefix_enabled",
    "trusted_alt_names",
    "public_url",
    "public_hub_url",
    "internal_ssl",
    "internal_trust_bundles",
    "internal_certs_location",
)


SPAWNER_TRAITS = set(Spawner.class_trait_names())
# YitongSpawner's own uses of Spawner traits, not meant for the child
OWN_TRAITS = {"options_form", "options_from_form", "server_token_scopes", "start_timeout"}


def make_child(parent: Spawner, cls: type[Spawner], overrides: dict[str, Any]) -> Spawner:
    """A fresh backend spawner: the parent's hub wiring, scalars as constructor args, then overrides.

    `c.YitongSpawner.<Spawner trait>` (cmd, environment, default_url, ...) reaches the child too.
    """
    kwargs = {name: getattr(parent, name) for name in CONSTRUCTOR_TRAITS if parent.has_trait(name)}
    # our options are consumed by the parent; KubeSpawner would read "profile" as its own
    # profile_list slug and batchspawner would paste user_options into its script template
    kwargs["user_options"] = {}
    own = parent.config.get("YitongSpawner", {})
    kwargs.update({k: v for k, v in own.items() if k in SPAWNER_TRAITS and k not in OWN_TRAITS})
    kwargs.update({k: v for k, v in overrides.items() if not isinstance(v, (dict, list))})
    child = cls(**kwargs)
    if child.has_trait("profile_list"):
        # KubeSpawner applies its profile_list's default profile (its kubespawner_override: image,
        # resources, ...) at start over whatever was chosen here. Profiles are the platform's: a
        # c.KubeSpawner.profile_list left in the hub config is never applied (move it to the
        # settings' `profiles`, which accept it as written).
        if child.profile_list:
            child.log.warning(
                "c.KubeSpawner.profile_list is ignored: Yitong's profiles come from the platform; "
                "move the list to the settings file's `profiles` (z2jh profile lists are accepted there)"
            )
        child.profile_list = []
    apply_overrides(child, overrides)
    for name in HUB_SET_TRAITS:
        value = getattr(parent, name)
        if value and child.has_trait(name):
            setattr(child, name, value)
    return child


def allow_root_args(args: list[str], uid: int | None = None) -> list[str]:
    """Jupyter Server refuses to run as root without --allow-root (single-person mode as root)."""
    if (os.geteuid() if uid is None else uid) == 0 and "--allow-root" not in args:
        return [*args, "--allow-root"]
    return args


def drop_to(uid: int, gid: int) -> None:
    """In the child before exec: become the account, no supplementary groups (root only)."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


class YitongLocalProcessSpawner(SimpleLocalProcessSpawner):
    """Local processes for the embedded default, one home per hub user.

    Multi-user mode (the hub runs as root): `account` is the system account the platform
    service created for this hub user (`yt-<name>`, home `<data_dir>/home/<user>`, 0700);
    the server runs with its uid/gid, no supplementary groups, HOME/USER/SHELL its own.
    Single-person mode (`account` empty): the server runs as the hub's own Unix user.
    """

    account = Dict(
        help="""The system account to run as: {name, uid, gid, home} (set by YitongSpawner from the
        platform's spawn options; empty: the hub's own account). Not config."""
    )

    def make_preexec_fn(self, name: str):
        home = self.home_dir
        account = dict(self.account)

        def preexec() -> None:
            if account:
                drop_to(int(account["uid"]), int(account["gid"]))
            os.makedirs(home, 0o700, exist_ok=True)
            os.chdir(home)

        return preexec

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        env = super().user_env(env)
        if self.account:
            env["USER"] = env["LOGNAME"] = self.account["name"]
        return env

    def get_args(self) -> list[str]:
        return allow_root_args(super().get_args(), int(self.account["uid"]) if self.account else None)
