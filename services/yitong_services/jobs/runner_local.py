"""The local backend: each attempt is a process tree on this machine, in its own session.

``submit`` starts ``wrapper`` around ``local_command``'s argv, in its own session: forked from a
warm fork server (``launcher.py``: no interpreter start per attempt), else as a new interpreter
(``subprocess.Popen``; stdin a pipe for the secrets made while it starts). Never the event loop's
``create_subprocess_exec``: uvloop forks the whole service (10-20 ms of page tables with the
event loop held, per attempt), Popen uses vfork. The end is awaited on a pidfd; each rank logs to ``<job>/attempt-<n>/logs/rank-<r>.log``
(under a launcher, ``rankshim`` in front of the user's program sends each rank's output there;
a single process gets rank 0's log from the wrapper, one process fewer). Waiting on the wrapper
tells the manager at once when an attempt ends (``Backend.on_exit``). The ref is
``<pid>:<start ticks>:<attempt dir>``: liveness checks compare /proc start times, so a reused
pid is never mistaken for the job.

Multi-user mode (``confinement``; the service runs as root): the wrapper and everything under
it run as the owner's system account (uid/gid, no supplementary groups, HOME/USER its own, the
service's secrets stripped from the environment as in every mode). The job's directory is
owned by that account (0700); its inputs are a platform-owned, read-only copy of links
(``materialize.link_trees``) inside it. Every file the service reads back from a job's
directory (pid, exit record, logs) must be a plain file of the directory's owner, so a job
cannot point the service at a secret or at another person's files. Each attempt runs in a PID
namespace of its own (``backends.local.pid_namespaces``, core/pidns.py): the pid in the ref and
the pid file is the attempt's anchor in the host's namespace, the wrapper is PID 1 of the job's
own, and the job's ``ps`` and ``/proc`` show only its own processes. Each attempt also runs in a
cgroup of its own (``backends.local.cgroups``, jobs/attempt_limits.py): the job's cpu and memory
as hard limits, made by its root child; :func:`_look` kills what is left in it and removes it
once the attempt is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from anyio import to_thread

from ..core.accounts import Account
from ..core.confinement import account_for, mode_of, pid_namespace_usable, private_dir
from ..datasets.materialize import link_trees
from . import launcher, procs, ranklogs, wrapper
from .attempt_limits import AttemptLimits
from .backend import Backend, Launch, Polled
from .launch import user_argv
from .local import local_command

log = logging.getLogger(__name__)
SHIM = [sys.executable, "-m", "yitong_services.jobs.rankshim"]
#: the directory holding the ``yitong_services`` package (the wrapper starts without site-packages)
SERVICES_ROOT = str(Path(__file__).resolve().parents[2])
TORCHRUN = (sys.executable, "-m", "torch.distributed.run")


def attempt_dir(workdir: Path, attempt: int) -> Path:
    return workdir / f"attempt-{attempt}"


def parse_ref(ref: str) -> tuple[int, int, Path]:
    pid, started, path = ref.split(":", 2)
    return int(pid), int(started), Path(path)


def owner_of(attempt: Path) -> int:
    """The uid that owns a job's directory (the account its attempts run as)."""
    try:
        return os.lstat(attempt.parent).st_uid
    except FileNotFoundError:
        return os.geteuid()


#: free bytes under which a disk counts as full for an attempt that left no trace (a pid file is
#: a few bytes, a folder a block; root's reserve is not the job's)
FULL_BELOW = 1 << 20
RECORD_LIMIT = 1 << 17  # bytes of an attempt's pid file: its pid line and its exit line (a result)


def read_exit(path: Path) -> dict[str, Any] | None:
    """The attempt's exit record: the pid file's second line once it is whole (jobs/wrapper.py),
    else the ``exit`` file (an attempt of an older wrapper); None while it runs."""
    owner = owner_of(path)
    try:
        raw = procs.read_owned(path / "pid", owner, RECORD_LIMIT)
        lines = raw.split(b"\n") if raw is not None else []
        if len(lines) > 2 and lines[1]:
            return dict(json.loads(lines[1]))
        raw = procs.read_owned(path / "exit", owner, RECORD_LIMIT)
        return dict(json.loads(raw)) if raw is not None else None
    except (PermissionError, ValueError, TypeError):
        return None


def read_pid(path: Path) -> tuple[int, int] | None:
    try:
        raw = procs.read_owned(path / "pid", owner_of(path), 256)
        if raw is None:
            return None
        pid, started = raw.split(b"\n", 1)[0].split()
        return int(pid), int(started)
    except (PermissionError, ValueError):
        return None


def _look(ref: str, limits: AttemptLimits | None = None) -> Polled:
    """An attempt's state from its exit record and its process (blocking: a few small reads).
    With ``limits`` (its cgroup), an attempt that is over has what is left of it killed and its
    cgroup removed; one without an exit record whose cgroup saw an OOM kill (the kernel chose the
    wrapper) failed on its memory limit."""
    pid, started, here = parse_ref(ref)
    done = read_exit(here)
    if done is None and pid and procs.alive(pid, started):
        return Polled("running")
    if done is None:
        done = read_exit(here)  # it may have ended between the two looks
    oom = limits.oom_reason(here) if limits is not None and done is None else None
    if limits is not None:  # nothing it started outlives it, whatever session it made
        limits.end(here, keep=oom is not None)
    if done is not None:
        rc = done.get("exit_code")
        info = {"result": done["result"]} if "result" in done else {}
        return Polled("succeeded" if rc == 0 else "failed", rc, done.get("reason", ""), done.get("end"), info)
    if oom is not None:
        return Polled("failed", -signal.SIGKILL, oom)
    if (why := setup_refused(here)) is not None:
        return Polled("vanished", None, why)  # ended as one without an exit record, saying why
    return Polled("vanished", None, f"process {pid} vanished without an exit record")


def setup_refused(here: Path) -> str | None:
    """Why an attempt without a pid file was never set up: what its wrapper wrote beside the
    folder (wrapper.setup_failure), else, on a disk with no room left, the wrapper's sentence for
    that (it could not even write why); None when it had a pid file or the disk had room."""
    if (here / "pid").exists():
        return None
    try:
        raw = procs.read_owned(here.parent / f"{here.name}{wrapper.WHY}", owner_of(here), 512)
    except PermissionError:
        raw = None
    if raw:
        return raw.decode("utf-8", "replace").strip()
    try:
        st = os.statvfs(here.parent)
        mode = os.lstat(here.parent).st_mode
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return wrapper.setup_failure(OSError(errno.EROFS, ""))
    if st.f_bavail * st.f_frsize < FULL_BELOW or (st.f_files and st.f_favail == 0):
        return wrapper.setup_failure(OSError(errno.ENOSPC, ""))
    if not mode & stat.S_IWUSR:  # the job's folder is its owner's (owner_of): one it may not write
        return wrapper.setup_failure(OSError(errno.EACCES, ""))
    return None


class LocalBackend(Backend):
    name = "local"
    grace = 10.0  # seconds between SIGTERM and SIGKILL on cancel
    late_env = True  # the wrapper starts while the owner's token is minted, and reads it on stdin

    def __init__(self, data_dir: Path, settings: Any = None) -> None:
        super().__init__(data_dir, settings)
        self._watched: dict[int, subprocess.Popen | None] = {}  # pidfd -> the wrapper it watches
        self.fork_server: ForkServer | None = ForkServer(job_base_env(os.environ)) if FORK_SERVER else None

    @property
    def multi_user(self) -> bool:
        if not hasattr(self, "_mode"):
            self._mode = mode_of(self.settings) if self.settings is not None else "single-person"
        return self._mode == "multi-user"

    @property
    def pid_namespace(self) -> bool:
        """Multi-user: each attempt in a PID namespace of its own (``backends.local.pid_namespaces``,
        where this machine allows it: ``confinement.pid_namespace_usable``; blocking once)."""
        if not hasattr(self, "_pidns"):
            self._pidns = self.multi_user and pid_namespace_usable(self.settings)
        return self._pidns

    @property
    def limits(self) -> AttemptLimits | None:
        """Multi-user: each attempt's cgroup (jobs/attempt_limits.py) where ``backends.local.cgroups``
        is on and this host allows it. Blocking once (it makes the instance's parent cgroup and
        removes the empty ones a previous run left)."""
        if not hasattr(self, "_limits"):
            found = AttemptLimits.of(self.settings) if self.multi_user else None
            if found is not None:
                found.sweep()
            self._limits = found
        return self._limits

    def confine(self, launch: Launch) -> tuple[Account, dict[str, str]]:
        """Multi-user: the owner's account (created on first use), its job directory handed to it
        (0700), and the inputs linked read-only inside it. Blocking."""
        found = account_for(self.settings, launch.user)
        assert found is not None
        self.pid_namespace  # noqa: B018 -- checked once, here in a worker thread (it starts a process)
        self.limits  # noqa: B018 -- made once, here in a worker thread (cgroupfs writes)
        account = Account(found["name"], found["uid"], found["gid"], found["home"])
        jobs = private_dir(launch.workdir.parent, 0o711)
        private_dir(jobs.parent, 0o711)
        workdir = launch.workdir
        workdir.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(workdir)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, account.uid):
            raise PermissionError(f"{workdir} is not the job's own directory")
        os.chown(workdir, account.uid, account.gid, follow_symlinks=False)
        os.chmod(workdir, 0o700, follow_symlinks=False)
        paths: dict[str, str] = {}
        if launch.input_paths:
            sources = {m: Path(p) for m, p in launch.input_paths.items()}
            paths = link_trees(sources, jobs / ".staging", workdir / f"inputs-{launch.attempt}")
        return account, paths

    async def submit(self, launch: Launch) -> str:
        here = attempt_dir(launch.workdir, launch.attempt)
        account, input_paths = None, launch.input_paths
        if self.multi_user:
            account, input_paths = await to_thread.run_sync(self.confine, launch)
        argv, env = local_command(
            launch.spec,
            launch.job_id,
            str(launch.workdir),
            launch.visible_devices,
            input_paths,
            torchrun=TORCHRUN,
            devices=self.devices,
        )
        user = user_argv(launch.spec)
        launcher = argv[: len(argv) - len(user)]
        # a launcher (torchrun, mpirun) starts the ranks: the shim in front of each sends its output
        # to its rank's log; a single process needs no shim: the wrapper opens rank 0's log for it
        argv = [*launcher, *SHIM, str(here / "logs"), "--", *user] if launcher else user
        rank_log = [] if launcher else ["--log", str(here / "logs" / "rank-0.log")]
        limit = str(launch.spec.max_run_time or 0)
        full_env = job_base_env(os.environ)
        full_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full_env.get('PATH', '')}"
        full_env.update(env)
        full_env.update(launch.env)
        if account is not None:
            full_env.update(HOME=account.home, USER=account.name, LOGNAME=account.name)
        outputs = launch.workdir / launch.spec.outputs
        wrapper_args = [str(here), limit, "--cwd", str(launch.cwd), "--mkdir", str(outputs), *rank_log]
        planned = None  # the attempt's cgroup, made by its root child (launcher._confine)
        if account is not None and self.limits is not None:
            planned = self.limits.plan(here, launch.spec.cpu, launch.spec.memory)
            wrapper_args += self.limits.wrapper_args(launch.spec.memory)
        ref = ""

        def then() -> None:
            if ref:
                self.exited(ref)

        if self.fork_server is not None and self.fork_server.usable:
            if launch.late_env is not None:  # a warm fork starts in a millisecond: nothing to overlap
                full_env.update(await launch.late_env)
            request = {
                "argv": [*wrapper_args, "--", *argv],
                "env": full_env,
                "cwd": str(launch.workdir),
                "uid": account.uid if account is not None else None,
                "gid": account.gid if account is not None else None,
                "pid_namespace": account is not None and self.pid_namespace,
                "cgroup": planned,
            }
            pid = await self.fork_server.spawn(request)
            proc = None
        else:
            proc = self._popen(launch, wrapper_args, argv, full_env, account, planned)
            pid = proc.pid
        try:
            # say when the wrapper ends: it writes the exit record before it exits, so the manager
            # can read it at once rather than at its next poll
            ended = self._watch(pid, proc, then)
            if proc is not None and launch.late_env is not None:
                await self._hand_over(proc, launch.late_env, ended)
            started = procs.start_time(pid)  # one small /proc read: cheaper than a worker thread
        except BaseException:
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()
            _signal_group(pid, signal.SIGKILL)
            raise
        ref = f"{pid}:{started or 0}:{here}"
        if ended.done():  # it ended before the ref was known
            self.exited(ref)
        return ref

    def _popen(
        self,
        launch: Launch,
        wrapper_args: list[str],
        argv: list[str],
        env: dict[str, str],
        account: Account | None,
        planned: dict[str, dict[str, str]] | None = None,
    ) -> subprocess.Popen:
        """The wrapper as a new interpreter (without the fork server); multi-user, started as root
        and dropping to the owner's account itself (``launcher.launch_as``), in a namespace of its
        own as a forked one."""
        head = [sys.executable, "-I", "-S", "-c", wrapper.LAUNCH, SERVICES_ROOT]
        if account is not None:
            isolate = "1" if self.pid_namespace else "0"
            head = [sys.executable, "-I", "-S", "-c", launcher.LAUNCH_AS, SERVICES_ROOT]
            head += [str(account.uid), str(account.gid), isolate]
            head += ["--cgroup", json.dumps(planned)] if planned else []  # made and entered as root
        return subprocess.Popen(
            [
                *head,
                *wrapper_args,
                *(["--env-stdin"] if launch.late_env is not None else []),
                "--",
                *argv,
            ],
            cwd=str(launch.workdir),
            env=env,
            start_new_session=True,
            stdin=subprocess.PIPE if launch.late_env is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )

    def _watch(self, pid: int, proc: subprocess.Popen | None, then: Any) -> asyncio.Future[None]:
        """A future done once the wrapper ``pid`` has ended (a pidfd in the event loop; reaped
        here when it is this process's child, ``proc``), which also calls ``then``."""
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:  # a fork server's child that ended (and was reaped) already
            ended.set_result(None)
            return ended

        def readable() -> None:
            loop.remove_reader(fd)
            os.close(fd)
            self._watched.pop(fd, None)
            if proc is not None:
                proc.wait()  # at once: the pidfd says it has exited
            if not ended.done():
                ended.set_result(None)
            then()

        self._watched[fd] = proc
        loop.add_reader(fd, readable)
        return ended

    async def _hand_over(
        self, proc: subprocess.Popen, late: asyncio.Future[dict[str, str]], ended: asyncio.Future[None]
    ) -> None:
        """The secrets made while the wrapper started, as one JSON line on its stdin; when they
        could not be made, an empty stdin (the wrapper then starts nothing) and the error."""
        assert proc.stdin is not None
        try:
            extra = await late
        except BaseException:
            proc.stdin.close()
            _signal_group(proc.pid, signal.SIGKILL)
            raise
        line = json.dumps(extra).encode() + b"\n"
        try:  # one line, far below a pipe's buffer: the write does not block
            if not ended.done():
                proc.stdin.write(line)
                proc.stdin.flush()
        except BrokenPipeError:
            pass  # the wrapper is gone already; its exit record says why
        finally:
            proc.stdin.close()

    async def close(self) -> None:
        if self.fork_server is not None:
            self.fork_server.close()
        loop = asyncio.get_running_loop()
        for fd in list(self._watched):  # the jobs outlive the service; the next one adopts them
            loop.remove_reader(fd)
            os.close(fd)
        self._watched.clear()

    async def adopt(self, job_id: int, attempt: int) -> str | None:
        here = attempt_dir(self.data_dir / "jobs" / str(job_id), attempt)

        def find() -> str | None:
            owner = owner_of(here)
            found = read_pid(here)
            if found is not None and procs.uid(found[0]) != owner:
                found = None  # a pid file naming someone else's process is not this job's
            if found is None:
                pid = procs.find_by_argv(str(here))
                started = procs.start_time(pid) if pid and procs.uid(pid) == owner else None
                found = (pid, started) if pid and started else None
            if found is None:
                return f"0:0:{here}" if read_exit(here) else None
            return f"{found[0]}:{found[1]}:{here}"

        return await to_thread.run_sync(find)

    async def poll(self, ref: str) -> Polled:
        return await to_thread.run_sync(self._look, ref)

    def _look(self, ref: str) -> Polled:
        return _look(ref, self.limits)

    def look_many(self, refs: list[str]) -> dict[str, Polled]:  # type: ignore[override]
        """Every attempt's files (a few small reads each; blocking)."""
        limits = self.limits
        return {ref: _look(ref, limits) for ref in refs}

    async def poll_many(self, refs: list[str]) -> dict[str, Polled]:
        return await to_thread.run_sync(self.look_many, refs)

    async def cancel(self, ref: str) -> None:
        pid, started, _here = parse_ref(ref)
        if not pid or not procs.alive(pid, started):
            return
        _signal_group(pid, signal.SIGTERM)
        asyncio.get_running_loop().call_later(self.grace, self._kill_if_alive, pid, started)

    def _kill_if_alive(self, pid: int, started: int) -> None:
        if procs.alive(pid, started):
            _signal_group(pid, signal.SIGKILL)

    async def read_log(self, ref: str, rank: int, offset: int = 0) -> bytes:
        here = parse_ref(ref)[2]

        def read() -> bytes:
            path = here / "logs" / f"rank-{int(rank)}.log"
            try:
                return procs.read_owned(path, owner_of(here), ranklogs.CHUNK, offset) or b""
            except PermissionError:
                return (
                    f"[yitong: {path.name} is not a plain file of this job's; not shown]\n".encode()
                    if not offset
                    else b""
                )

        return await to_thread.run_sync(read)

    async def ranks(self, ref: str) -> list[int]:
        return await to_thread.run_sync(ranklogs.ranks, parse_ref(ref)[2])

    def describe(self, ref: str) -> dict[str, Any]:
        pid, _started, here = parse_ref(ref)
        return {
            "hosts": [socket.gethostname()],
            "access": f"local processes on {socket.gethostname()}, process group {pid}; files under {here.parent}",
        }


#: the service's own credentials and settings never reach a job's processes
PRIVATE_PREFIXES = ("JUPYTERHUB_", "YITONG_", "JPY_", "CONFIGPROXY_", "AWS_SECRET", "PGPASSWORD")


def job_base_env(environ) -> dict[str, str]:
    """The service's environment without its secrets (hub API token, database URL, OAuth
    client secrets): the base a local job's environment is built on."""
    return {k: v for k, v in environ.items() if not k.startswith(PRIVATE_PREFIXES)}


FORK_SERVER = True  # start wrappers from a warm fork server (launcher.py); False: a new interpreter each


class ForkServer:
    """The service's end of ``launcher.serve``: started on first use, again if it ended; one
    request at a time. ``usable`` turns false when it cannot be started (then each wrapper is a new
    interpreter, as without it)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.usable = env, True
        self._proc: subprocess.Popen | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    async def _start(self) -> None:
        self.close()
        ours, theirs = socket.socketpair()
        try:
            self._proc = subprocess.Popen(  # noqa: ASYNC220 (vfork: returns once it has exec-ed)
                [sys.executable, "-I", "-S", "-c", launcher.BOOT, SERVICES_ROOT],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=self.env,
                close_fds=True,
                start_new_session=True,  # not in the service's group: a ^C to the service spares it
            )
        finally:
            theirs.close()
        self._reader, self._writer = await asyncio.open_unix_connection(sock=ours)

    async def spawn(self, request: dict[str, Any]) -> int:
        """The pid of a new wrapper; OSError with the fork server's sentence when it could not."""
        async with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                try:
                    await self._start()
                except OSError as e:
                    self.usable = False
                    log.warning("the job fork server does not start (%s): each wrapper starts its own interpreter", e)
                    raise
            assert self._reader is not None and self._writer is not None
            try:
                self._writer.write(json.dumps(request).encode() + b"\n")
                await self._writer.drain()
                line = await asyncio.wait_for(self._reader.readline(), 30)
            except (TimeoutError, OSError) as e:
                self.close()
                raise OSError(f"the job fork server did not answer: {e!r}") from None
            if not line:
                self.close()
                raise OSError("the job fork server ended before it answered")
            answer = json.loads(line)
            if "error" in answer:
                raise OSError(answer["error"])
            return int(answer["pid"])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()  # it exits on the end of its input
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(0.5)
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
        self._proc = self._reader = self._writer = None


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
