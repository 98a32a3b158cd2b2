"""Backend spawner classes and how overrides are applied to them.

`local`: `YitongLocalProcessSpawner` (home under `<data_dir>/home/<user>`; in multi-user mode it runs
as the system account the platform service named in `GET /spawn-options`, see docs/security.md).
`kubernetes`: `kubespawner.KubeSpawner`. `slurm`: `yitong_spawner.slurm.YitongSlurmSpawner`.
Imported lazily so a hub without kubespawner/batchspawner still loads.
"""

from __future__ import annotations

import asyncio
import copy
import os
import secrets
from importlib.metadata import entry_points
from typing import Any

from jupyterhub.spawner import SimpleLocalProcessSpawner, Spawner
from traitlets import Dict, Float, List, Unicode

from . import leftovers

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
    the server runs with its uid/gid, no supplementary groups, HOME/USER/SHELL its own, and (with
    `pid_namespace` in the account, the platform's `backends.local.pid_namespaces`) in a PID
    namespace of its own with its own /proc (yitong_services/core/pidns.py): the pid the hub
    tracks and signals is its anchor, which passes SIGINT/SIGTERM on and exits as the server did;
    its kernels and terminals see only the server's processes, and whatever they leave running
    ends with the server.
    With `cgroup` in the account (`{parent, max_processes}`: the platform's `backends.local.cgroups`
    on and usable) the server runs in a cgroup of its own (yitong_services/core/cgroups.py, imported
    lazily: the local backend runs only where the platform's services are installed), entered as
    root before the drop: the profile's memory and cpu (`mem_limit`, `cpu_limit`) as hard limits,
    at most `max_processes` tasks, and once the server has ended everything left in it is stopped
    (SIGTERM, SIGKILL after `leftovers_grace`), whatever session it made. Without one, the marked
    processes are stopped instead (yitong_spawner/leftovers.py, best effort).
    Single-person mode (`account` empty): the server runs as the hub's own Unix user.
    """

    account = Dict(
        help="""The system account to run as: {name, uid, gid, home} (set by YitongSpawner from the
        platform's spawn options; empty: the hub's own account). Not config."""
    )
    server_mark = Unicode(
        "",
        help="""The random mark this start put in the server's environment (`YITONG_SERVER_ID`),
        which every process it starts inherits: once the server has ended, the processes of its
        account that carry it are stopped (yitong_spawner/leftovers.py). Not config.""",
    )
    leftovers_grace = Float(
        5.0,
        config=True,
        help="""Seconds between SIGTERM and SIGKILL to the processes an ended server left running
        (what its notebooks started in sessions of their own, code-server, TensorBoard).""",
    )
    cgroup_dirs = List(
        Unicode(),
        help="""This server's cgroup, one directory per hierarchy (made at its start when the account
        names a `cgroup`; saved in the state, so a restarted hub still stops what is left in it).
        Not config.""",
    )
    # the stop of an ended server's processes, running in the background (tests await it)
    leftovers_task: asyncio.Future | None = None

    def make_preexec_fn(self, name: str):
        home = self.home_dir
        account = dict(self.account)
        enter = _cgroup_enter(list(self.cgroup_dirs))

        def become() -> None:
            enter()  # as root, before the drop: the server's cgroup (a no-op without one)
            if account:
                drop_to(int(account["uid"]), int(account["gid"]))
            os.makedirs(home, 0o700, exist_ok=True)
            os.chdir(home)

        if not (account and account.get("pid_namespace")):
            return become

        from yitong_services.core import pidns  # the local backend runs where the services are

        pidns.prepare()

        def preexec() -> None:  # the tracked pid is the anchor; the server runs in its own namespace
            pidns.enter_exec(become)

        return preexec

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        env = super().user_env(env)
        if self.account:
            env["USER"] = env["LOGNAME"] = self.account["name"]
        if self.server_mark:
            env[leftovers.MARK] = self.server_mark
        return env

    async def start(self):  # type: ignore[no-untyped-def]
        self.server_mark = secrets.token_hex(16)
        self.cgroup_dirs = await asyncio.to_thread(self._make_cgroup)
        try:
            return await super().start()
        except BaseException:
            if self.cgroup_dirs:
                await asyncio.to_thread(_cgroup_end, list(self.cgroup_dirs), 0.0)
                self.cgroup_dirs = []
            raise

    def _make_cgroup(self) -> list[str]:
        """The server's cgroup, made (blocking): its directories, [] without one."""
        spec = (self.account or {}).get("cgroup")
        if not spec:
            return []
        from yitong_services.core import cgroups

        parent = str(spec["parent"])
        layout = cgroups.usable(parent)
        if layout.kind == "none":
            self.log.warning("%s's server runs without kernel limits: %s", self.user.name, layout.why)
            return []
        name = f"server-{cgroups.safe_name(self.user.name)}"
        if self.name:
            name += f"-{cgroups.safe_name(self.name)}"
        _cgroup_end(cgroups.dirs_of(layout, parent, name), 0.0)  # a previous run's, if its end was missed
        limits = {"cpu": self.cpu_limit, "memory": self.mem_limit, "pids": int(spec["max_processes"])}
        planned = cgroups.plan(layout, parent, name, limits)
        cgroups.apply(planned)
        return list(planned)

    async def poll(self):  # type: ignore[no-untyped-def]
        mark = self.server_mark  # the base's poll clears the state once the server has ended
        dirs = list(self.cgroup_dirs)
        status = await super().poll()
        if status is not None and (mark or dirs):
            self.server_mark, self.cgroup_dirs = "", []
            self.leftovers_task = asyncio.ensure_future(self._stop_leftovers(mark, dirs))
        return status

    async def _stop_leftovers(self, mark: str, dirs: list[str] = ()) -> None:  # type: ignore[assignment]
        """Stop what the ended server started that is still running (in the background: a poll
        must not wait out the grace): everything in its cgroup, else its marked processes."""
        if dirs:
            try:
                killed = await asyncio.to_thread(_cgroup_end, list(dirs), self.leftovers_grace)
                if killed:
                    self.log.info("Killed %d process(es) %s's server left running", killed, self.user.name)
            except Exception:
                self.log.exception("Could not stop the processes in %s's server's cgroup", self.user.name)
            return
        uid = int(self.account["uid"]) if self.account else os.getuid()
        try:
            pidfds = await asyncio.to_thread(leftovers.marked, mark, uid)
            if not pidfds:
                return
            count = len(pidfds)
            killed = await asyncio.to_thread(leftovers.stop, pidfds, self.leftovers_grace)
            self.log.info(
                "Stopped %d process(es) that %s's server left running (%d did not end on SIGTERM)",
                count,
                self.user.name,
                killed,
            )
        except Exception:  # best effort: the server itself has ended either way
            self.log.exception("Could not stop the processes %s's server left running", self.user.name)

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        if self.server_mark:
            state["server_mark"] = self.server_mark
        if self.cgroup_dirs:
            state["cgroup"] = list(self.cgroup_dirs)
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self.server_mark = state.get("server_mark", "")
        self.cgroup_dirs = list(state.get("cgroup") or [])

    def get_args(self) -> list[str]:
        return allow_root_args(super().get_args(), int(self.account["uid"]) if self.account else None)


def _cgroup_enter(dirs: list[str]):  # type: ignore[no-untyped-def]
    """A function that moves the calling process into ``dirs`` (imported here, in the hub, not in
    the forked child)."""
    if not dirs:
        return lambda: None
    from yitong_services.core import cgroups

    return lambda: cgroups.enter(dirs)


def _cgroup_end(dirs: list[str], grace: float) -> int:
    """What is left in a server's cgroup stopped (SIGTERM, SIGKILL after ``grace``), then the
    cgroup removed (blocking); how many had to be killed."""
    from yitong_services.core import cgroups

    killed = cgroups.terminate(dirs, grace) if cgroups.members(dirs) else 0
    cgroups.remove(dirs)
    return killed
