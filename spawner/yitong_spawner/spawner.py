"""`YitongSpawner`: the VC-aware profile picker and quota check in front of a backend spawner.

Before start() (the hub's pre-spawn step): ask the platform what this user may start, validate
`user_options` against it, reserve the profile's resources (`POST /allocations`), then wait for
a slot in the hub's start queue (start_queue.py). start(): build a fresh child spawner of the
backend class with the profile applied, and delegate. The allocation is released when the
server stops, when poll() finds it gone, or when the child fails to start. Derived names live
in state.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyterhub.spawner import Spawner
from jupyterhub.utils import maybe_future
from traitlets import Any as AnyTrait
from traitlets import default, observe

from . import builders, profile_list
from .backends import make_child, resolve_backend
from .errors import spawn_error
from .form import picker_model, render_picker
from .options import OptionsError, parse_form, requested_options, validate_options
from .platform_client import PlatformClient, PlatformError
from .scopes import server_scopes
from .start_queue import StartQueue, default_limit, describe, shared_queue
from .traits import YitongSpawnerTraits


async def _render_form(spawner: YitongSpawner) -> str:
    return await spawner.render_options_form()


class YitongSpawner(Spawner, YitongSpawnerTraits):
    child = AnyTrait(None, allow_none=True, help="The backend spawner of the current server (not config).")
    allocation: dict[str, Any] | None = None
    _slot_task: asyncio.Future[None] | None = None
    _reserved: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None = None  # reserve() -> start()
    _forget_task: asyncio.Future[None] | None = None
    has_run = False  # this (named) server has started at least once; kept across stops
    saved: dict[str, Any] = {}
    account: dict[str, Any] | None = None  # multi-user mode: the system account from spawn options
    visible_env: list[str] = []  # every visible-device variable of the platform's accelerator table
    custom_value: str | None = None  # a z2jh unlisted choice's value, checked in reserve()

    @default("options_form")
    def _default_options_form(self):
        return _render_form

    @default("options_from_form")
    def _default_options_from_form(self):
        return parse_form

    def options_from_query(self, query_data: dict[str, Any]) -> dict[str, str]:
        return parse_form(query_data)

    @default("server_token_scopes")
    def _default_server_token_scopes(self) -> list[str]:
        return server_scopes(self.platform_service_name)

    @default("start_timeout")
    def _default_start_timeout(self) -> int:
        return 300 if self.backend in ("slurm", "kubernetes") else 60

    @observe("port")
    def _forward_port(self, change) -> None:
        # batchspawner-singleuser reports its port to the hub, which sets it on *this* spawner
        if self.child is not None and change.new:
            self.child.port = change.new

    def start_queue(self) -> StartQueue:
        return shared_queue(self.start_concurrency or default_limit(self.backend))

    def platform(self) -> PlatformClient:
        return PlatformClient(self.platform_api_url, self.platform_api_token, self.platform_timeout)

    async def render_options_form(self) -> str:
        try:
            spawn_options = await self.platform().spawn_options(self.user.name)
        except PlatformError as e:
            self.log.error("Profile picker for %s: %s", self.user.name, e.detail)
            return render_picker(error=e.detail)
        custom = {name for name, entry in self.kubespawner_overrides.items() if entry.get("unlisted")}
        return render_picker(picker_model(spawn_options, self.user_options, custom))

    # -- the child spawner ------------------------------------------------------------------

    def backend_cls(self) -> type[Spawner]:
        return self.backend_class or resolve_backend(self.backend)

    def profile_overrides(
        self, vc: dict[str, Any], profile: dict[str, Any], allocation: dict[str, Any]
    ) -> dict[str, Any]:
        resources = allocation.get("resources") or builders.profile_resources(profile)
        env = builders.server_env(
            self.user_api_url, vc["name"], profile["name"], allocation.get("id"), profile.get("kernel")
        )
        home = f"{self.data_dir}/home/{self.user.name}"
        placement = profile.get("placement")  # the platform's accelerator table, for this profile
        if self.backend == "kubernetes":
            own = builders.kube_overrides(
                vc=vc["name"],
                profile=profile,
                resources=resources,
                env=env,
                namespace_prefix=self.kube_namespace_prefix,
                placement=placement,
            )
            extra = profile_list.kube_extra(self.kubespawner_overrides.get(profile["name"]), self.custom_value)
            return builders.layered(extra, own)
        if self.backend == "slurm":
            out = builders.slurm_overrides(
                vc=vc["name"],
                profile=profile,
                resources=resources,
                env=env,
                partition=self.slurm_partition,
                account_template=self.slurm_account_template,
                placement=placement,
            )
            return {"home_dir": home, **out}
        out = builders.local_overrides(
            resources=resources,
            env=env,
            visible_env=self.visible_env,
            placement=placement,
            indices=(allocation.get("devices") or {}).get("visible"),
        )
        if self.account:  # multi-user: the platform service created it; its home is the server's
            return {"home_dir": self.account["home"], "account": dict(self.account), **out}
        return {"home_dir": home, **out}

    def build_child(self, overrides: dict[str, Any]) -> Spawner:
        self.child = make_child(self, self.backend_cls(), overrides)
        return self.child

    # -- lifecycle --------------------------------------------------------------------------

    async def run_pre_spawn_hook(self):
        """Reserve, then wait for a start slot: the hub calls this outside `start_timeout`, so
        a refusal comes back at once and a wait in the start queue never times the spawn out."""
        await self.reserve()
        await self.start_queue().acquire(self)
        try:
            return await maybe_future(super().run_pre_spawn_hook())
        except BaseException:
            self.start_queue().release(self)
            raise

    async def _release_slot_when_up(self) -> None:
        """The slot covers the server's own start-up: the hub clears `_start_pending` once the
        server answers HTTP or the start has failed."""
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.http_timeout + 5
            while self._start_pending and loop.time() < deadline:  # noqa: ASYNC110 (the hub's flag, no event)
                await asyncio.sleep(0.05)
        finally:
            self.start_queue().release(self)

    async def reserve(self) -> None:
        """Ask the platform what this user may start, validate `user_options` against it and
        reserve the profile's resources (`POST /allocations`); refusals are spawn errors."""
        client = self.platform()
        try:
            spawn_options = await client.spawn_options(self.user.name)
            asked: dict[str, Any] = Spawner.user_options.get(self)  # (the trait: mypy cannot infer it here)
            options = requested_options(asked, getattr(self, "handler", None))
            vc, profile = validate_options(options, spawn_options)
            try:
                entry = self.kubespawner_overrides.get(profile["name"])
                self.custom_value = profile_list.check_custom(entry, (options or {}).get("custom"))
            except ValueError as e:
                raise OptionsError(str(e)) from None
            if options is not asked:  # an empty API body: show what was chosen
                self.user_options = {"vc": vc["name"], "profile": profile["name"]}
            self.account = spawn_options.get("account") or None
            self.visible_env = list(spawn_options.get("visible_env") or [])
        except OptionsError as e:
            self._forget_when_refused()
            raise spawn_error(str(e), reason="options", status=400) from None
        except PlatformError as e:
            self._forget_when_refused()
            raise spawn_error(e.detail, reason="platform", status=e.status) from None
        ref = f"{self.user.name}/{self.name}"
        try:
            allocation = await client.allocate(self.user.name, vc["name"], profile["name"], ref)
        except PlatformError as e:
            self._forget_when_refused()
            raise spawn_error(e.detail, reason="quota", status=e.status) from None
        self.allocation = {"id": allocation.get("id"), "vc": vc["name"], "profile": profile["name"]}
        self._reserved = (vc, profile, allocation)

    def _forget_when_refused(self) -> None:
        """A named server refused before it ever ran is removed once the hub is done with the
        spawn (the hub would keep it, and list a server the person never had)."""
        if self.name and not self.has_run:
            self._forget_task = asyncio.ensure_future(self._forget())

    async def _forget(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while (self._spawn_pending or self._start_pending) and loop.time() < deadline:  # noqa: ASYNC110 (the hub's flags)
            await asyncio.sleep(0.05)
        user, name = self.user, self.name
        if self.active or self.has_run or user.spawners.get(name) is not self:
            return
        try:
            await user._delete_spawner(self)
            user.db.delete(self.orm_spawner)
            user.spawners.pop(name, None)
            user.db.commit()
            self.log.info("Removed %s: refused before it ever ran", self._log_name)
        except Exception as e:  # the server stays listed; nothing else depends on it
            self.log.warning("Could not remove refused server %s: %s", self._log_name, e)

    async def start(self):
        try:
            url = await self._start()
        except BaseException:
            self.start_queue().release(self)
            raise
        if self.start_queue().holds(self):
            self._slot_task = asyncio.ensure_future(self._release_slot_when_up())
        return url

    async def _start(self):
        if self._reserved is None:  # started without the hub's pre-spawn step (tests, old hubs)
            await self.reserve()
        assert self._reserved is not None
        (vc, profile, allocation), self._reserved = self._reserved, None
        try:
            overrides = self.profile_overrides(vc, profile, allocation)
            self.saved = {"vc": vc["name"], "profile": profile["name"], "overrides": overrides}
            child = self.build_child(overrides)
            url = await maybe_future(child.start())
            self.has_run = True
            return url
        except BaseException as e:
            await asyncio.shield(self.release())
            if isinstance(e, builders.BuildError):
                raise spawn_error(str(e), reason="backend", status=409) from None
            raise

    async def release(self) -> None:
        """Give the allocation back (idempotent; a platform outage is logged, not raised)."""
        allocation, self.allocation, self._reserved = self.allocation, None, None
        if not allocation or allocation.get("id") is None:
            return
        try:
            await self.platform().release(allocation["id"])
            self.log.info("Released allocation %s of %s", allocation["id"], self._log_name)
        except PlatformError as e:
            if e.status == 0:  # the service is down (the hub is stopping after it, or an outage): not lost
                self.log.warning(
                    "Allocation %s of %s not released now (%s): the platform service drops it when it "
                    "next starts and sees the server gone",
                    allocation["id"],
                    self._log_name,
                    e.detail,
                )
                return
            self.log.error("Could not release allocation %s of %s: %s", allocation["id"], self._log_name, e.detail)

    async def poll(self):
        if self.child is None:
            await self.release()
            return 0
        status = await maybe_future(self.child.poll())
        if status is not None:
            await self.release()
        return status

    async def stop(self, now: bool = False) -> None:
        self.start_queue().release(self)
        try:
            if self.child is not None:
                await maybe_future(self.child.stop(now=now))
        finally:
            await self.release()

    async def progress(self):
        queue, said = self.start_queue(), ""
        for _ in range(100_000):  # bounded: 0.5 s each, far beyond any wait
            if self.child is not None or not (self._start_pending or self._spawn_pending):
                break
            pos = queue.position(self)
            message = describe(pos) if pos else "Reserving resources with the platform service..."
            if message != said:
                said = message
                yield {"message": message}
            await asyncio.sleep(0.5)
        if self.child is not None:
            async for event in self.child.progress():
                yield event

    async def move_certs(self, paths):
        return paths  # internal_ssl: the child is built in start(); see README

    # -- state (derived names are saved, never recomputed) ------------------------------------

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        if self.child is not None:
            state["backend"] = self.backend
            state["child_state"] = self.child.get_state()
            state.update({k: v for k, v in self.saved.items()})
            for name in ("namespace", "req_account", "req_partition", "home_dir"):
                if self.child.has_trait(name):
                    state[name] = getattr(self.child, name)
        if self.allocation:
            state["allocation"] = dict(self.allocation)
        if self.has_run:
            state["has_run"] = True
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self.has_run = bool(state.get("has_run")) or self.has_run
        self.allocation = dict(state["allocation"]) if state.get("allocation") else None
        if "child_state" in state and state.get("backend", self.backend) == self.backend:
            self.saved = {k: state[k] for k in ("vc", "profile", "overrides") if k in state}
            overrides = dict(self.saved.get("overrides") or {})
            overrides.update(
                {k: state[k] for k in ("namespace", "req_account", "req_partition", "home_dir") if k in state}
            )
            self.build_child(overrides).load_state(state["child_state"])

    def clear_state(self) -> None:
        super().clear_state()
        if self.child is not None:
            self.child.clear_state()
        self.child = None
        self.saved = {}
