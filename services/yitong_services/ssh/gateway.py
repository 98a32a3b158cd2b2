"""The SSH gateway: an asyncssh server inside the platform service (``ssh.port``; 0: off).

Public-key authentication only: the key must be one the login name's person added
(``/me/ssh-keys``) and the person must exist in the hub. The login name also names the target
(``targets``), which must be the person's own: their running notebook server (reached through
its terminal API, ``notebook``) or a running job of theirs in a VC they still belong to (a shell
beside the worker on the local backend, in its PID namespace and its attempt's cgroup, held to
the job's memory, CPU and process limits and killed with it; an ``srun --overlap`` step on Slurm,
which Slurm holds to the job's allocation). Local port forwarding (``ssh -L``) reaches only the
person's own services on this machine's localhost, in multi-user mode (ssh/forwarding.py); no
remote, unix-socket, agent or X11 forwarding, no subsystems (SFTP). Everything refused after login is one sentence on stderr
and exit status 255; a person has at most ``ssh.max_sessions`` sessions open.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import asyncssh
import httpx
from anyio import to_thread

from ..core.authz import Person
from ..core.context import Context
from ..core.errors import Refusal
from ..core.hub import HubError
from ..jobs.backend import Backend
from ..jobs.models import Job
from ..vcs.catalog import member_vc
from . import forwarding, hostkey, keys, local_shell, notebook, worker
from .targets import Target, parse_login

log = logging.getLogger(__name__)
REFUSED = 255


class Refused(Exception):
    """Why a logged-in person does not reach the target (a sentence)."""


class _Server(asyncssh.SSHServer):
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.conn = conn

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return False

    def host_based_auth_supported(self) -> bool:
        return False

    def connection_requested(self, dest_host: str, dest_port: int, orig_host: str, orig_port: int) -> Any:
        """``ssh -L``: to the person's own ports on localhost only (ssh/forwarding.py)."""
        target: Target | None = self.conn.get_extra_info("yitong_target") if self.conn else None
        if target is None or self.conn is None:
            return False
        return self.gateway.forward(self.conn, target, dest_host, dest_port)

    def server_requested(self, listen_host: str, listen_port: int) -> bool:
        """``ssh -R``: never (the gateway binds nothing for anyone)."""
        log.info("SSH: remote forwarding to %s:%s refused", listen_host, listen_port)
        return False

    def unix_connection_requested(self, dest_path: str) -> bool:
        return False

    def unix_server_requested(self, listen_path: str) -> bool:
        return False

    async def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:  # type: ignore[override]
        target = parse_login(username)
        if target is None:
            return False
        ok = await self.gateway.key_of(target.person, key.get_fingerprint("sha256"))
        if ok and self.conn is not None:
            self.conn.set_extra_info(yitong_target=target)
        return ok


class Gateway:
    def __init__(self, ctx: Context, backend: Backend | None = None) -> None:
        self.ctx = ctx
        self.backend = backend  # the job manager's (the Slurm step runs as its job_account)
        self.settings = ctx.settings
        self.server: asyncssh.SSHAcceptor | None = None
        self.http = httpx.AsyncClient(timeout=30)
        self.sessions: Counter[str] = Counter()  # open sessions per person (ssh.max_sessions)

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.get_port())

    async def start(self) -> None:
        key = await to_thread.run_sync(hostkey.load_or_create, self.settings.data_dir)
        try:
            self.server = await self._listen(key)
        except OSError as e:  # the port is taken: the platform runs on, without SSH
            log.error("SSH gateway not started on %s:%s: %s", self.settings.ssh.ip, self.settings.ssh.port, e)
            return
        log.info("SSH gateway listening on %s:%s", self.settings.ssh.ip, self.port)

    async def _listen(self, key: asyncssh.SSHKey) -> asyncssh.SSHAcceptor:
        return await asyncssh.create_server(
            lambda: _Server(self),
            self.settings.ssh.ip,
            self.settings.ssh.port,
            server_host_keys=[key],
            process_factory=self.session,
            encoding=None,
            line_editor=False,
            agent_forwarding=False,
            x11_forwarding=False,
            allow_scp=False,
            sftp_factory=None,
            login_timeout=30,
            keepalive_interval=60,
        )

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None
        await self.http.aclose()

    async def forward(self, conn: asyncssh.SSHServerConnection, target: Target, host: str, port: int) -> Any:
        """A local forward's session once it is the person's own port (ssh/forwarding.py); else
        ChannelOpenError with the sentence the client prints."""

        def check() -> str | None:
            uid = forwarding.person_uid(self.settings, target.person)
            return forwarding.refusal(host, port, uid, os.geteuid(), forwarding.read_listeners)

        why = await to_thread.run_sync(check)
        if why is not None:
            log.info("SSH: %s's forward to %s:%s refused: %s", target.person, host, port, why)
            raise asyncssh.ChannelOpenError(asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, why)
        log.info("SSH: %s forwards to %s:%s", target.person, host, port)
        return await conn.forward_connection(host, port)

    async def key_of(self, person: str, fingerprint: str) -> bool:
        """``fingerprint`` is a key ``person`` added, and the hub knows ``person``."""

        def read() -> set[str]:
            with self.ctx.db.session() as s:
                return keys.fingerprints_of(s, person)

        if fingerprint not in await to_thread.run_sync(read):
            return False
        try:
            return await self.ctx.hub.user(person) is not None
        except HubError:
            log.warning("SSH login of %s refused: the hub cannot be asked", person)
            return False

    async def session(self, process: asyncssh.SSHServerProcess) -> None:
        target: Target = process.get_extra_info("yitong_target")
        peer = process.get_extra_info("peername")
        eol = "\r\n" if process.get_terminal_type() else "\n"
        log.info("SSH: %s into %s from %s (%s)", target.person, target.describe(), peer, process.command or "shell")
        limit = self.settings.ssh.max_sessions
        self.sessions[target.person] += 1
        try:
            if self.sessions[target.person] > limit:
                raise Refused(
                    f"{target.person} has {limit} SSH sessions open, the most one person may (ssh.max_sessions)"
                )
            if process.subsystem:
                raise Refused(f"the {process.subsystem[:40]!r} subsystem is not offered here (no SFTP or SCP)")
            if target.kind == "server":
                status = await self.into_server(process, target)
            else:
                status = await self.into_job(process, target)
        except (Refused, notebook.ServerRefused, local_shell.StartRefused) as e:
            process.stderr.write(f"yitong: {e}{eol}".encode())
            status = REFUSED
        except Exception:
            log.exception("SSH session of %s into %s failed", target.person, target.describe())
            process.stderr.write(f"yitong: the SSH session failed; the platform's log has the details{eol}".encode())
            status = REFUSED
        finally:
            self.sessions[target.person] -= 1
            if not self.sessions[target.person]:
                del self.sessions[target.person]
        process.exit(status)

    # -- notebook servers -------------------------------------------------------------
    async def into_server(self, process: asyncssh.SSHServerProcess, target: Target) -> int:
        model = await self.ctx.hub.user(target.person, fresh=True) or {}
        server = (model.get("servers") or {}).get(target.server)
        label = f"{target.person}/{target.server}"
        if not server or not server.get("ready"):
            raise Refused(f"{target.person} has no running server {target.server!r}: start it from the hub first")
        hub_url = (self.settings.ssh.hub_url or os.environ.get("YITONG_HUB_URL") or "").rstrip("/")
        if not hub_url:
            raise Refused("this gateway does not know the hub's URL (settings: ssh.hub_url)")
        token, token_id = await self.ctx.hub.create_token(
            target.person,
            [f"access:servers!server={label}"],
            self.settings.ssh.token_lifetime,
            f"yitong ssh into {label}",
        )
        try:
            return await notebook.run(process, hub_url + server["url"], token, self.http)
        finally:
            try:
                await self.ctx.hub.revoke_token(target.person, token_id)
            except HubError as e:
                log.warning("SSH token %s of %s not revoked (it expires on its own): %s", token_id, target.person, e)

    # -- jobs ---------------------------------------------------------------------------
    async def into_job(self, process: asyncssh.SSHServerProcess, target: Target) -> int:
        model = await self.ctx.hub.user(target.person, fresh=True)
        if model is None:
            raise Refused(f"{target.person} has no job {target.job_id}")
        person = Person(target.person, bool(model.get("admin")), tuple(model.get("groups") or ()))
        job = await to_thread.run_sync(self._own_job, person, target.job_id)
        pty = process.get_terminal_type() is not None
        if job["backend"] == "local":
            from ..jobs.runner_local import owner_of, parse_ref

            pid, _started, attempt = parse_ref(job["backend_ref"])
            found = await to_thread.run_sync(worker.find_worker, pid, target.rank)
            if found is None:
                raise Refused(f"job {target.job_id} has no running worker {target.rank}")
            owner = await to_thread.run_sync(owner_of, attempt)
            if found.uid != owner:
                raise Refused(f"worker {target.rank} of job {target.job_id} is not running as the job's account")
            argv = worker.shell_argv(process.command, pty)
            cgroup = await to_thread.run_sync(self._attempt_cgroup, attempt)
            try:  # the shell beside the job's processes, in the job's own namespaces when it has them
                namespaces = await to_thread.run_sync(worker.namespaces_of, found)
            except OSError:
                raise Refused(f"job {target.job_id} has no running worker {target.rank}") from None
            return await local_shell.run(process, argv, found.env, found.cwd, found.uid, found.gid, namespaces, cgroup)
        if job["backend"] == "slurm" and self.backend is not None and self.backend.name == "slurm":
            from ..jobs.runner_slurm import PASS_ENV
            from ..jobs.runner_slurm import parse_ref as slurm_ref

            if target.rank:
                raise Refused(
                    f"on Slurm, SSH reaches worker 0 of a job only (its first node); job {target.job_id} .{target.rank} is not mapped yet"
                )
            slurm_id, _path = slurm_ref(job["backend_ref"])
            backend: Any = self.backend
            # the account the job's own steps run as (the backend's run_as), never another
            account = await to_thread.run_sync(backend.job_account, person.name)
            env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
            env["PATH"] = backend.config.job_path(os.environ.get("PATH", ""))
            if account is not None:
                env.update(HOME=account.home, USER=account.name, LOGNAME=account.name)
            cwd = await to_thread.run_sync(self._job_dir, target.job_id)
            argv = worker.slurm_argv(slurm_id, process.command, pty)
            uid, gid = (account.uid, account.gid) if account else (None, None)
            return await local_shell.run(process, argv, worker.without_secrets(env), cwd, uid, gid)
        raise Refused(f"SSH into {job['backend']} jobs is not available yet (use the engine's own exec)")

    def _attempt_cgroup(self, attempt: Path) -> list[str] | None:
        """The cgroup directories of the job attempt (jobs/attempt_limits.py) the shell joins, held
        to the job's limits and killed with it; None where attempts have none (single-person, no
        cgroups on this host). Blocking (once: the backend's layout is cached)."""
        limits = getattr(self.backend, "limits", None) if self.backend is not None else None
        return limits.dirs(attempt) if limits is not None else None

    def _job_dir(self, job_id: int) -> str:
        path = Path(self.settings.data_dir).absolute() / "jobs" / str(job_id)
        return str(path) if path.is_dir() else "/"

    def _own_job(self, person: Person, job_id: int) -> dict[str, Any]:
        """The person's own job in a VC they belong to; anything else reads as absent."""
        absent = Refused(f"{person.name} has no job {job_id}")
        with self.ctx.db.session() as s:
            job = s.get(Job, job_id)
            if job is None or job.user != person.name:
                raise absent
            try:
                member_vc(s, person, job.vc)
            except Refusal:
                raise absent from None
            if job.state != "running" or not job.backend_ref:
                raise Refused(f"job {job_id} is {job.state}, not running")
            return {"backend": job.backend, "backend_ref": job.backend_ref}
