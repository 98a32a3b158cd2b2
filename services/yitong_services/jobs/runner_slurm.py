"""The Slurm backend: each attempt is one ``sbatch`` job; one ``squeue`` call polls them all.

``submit`` writes ``slurm.batch_script`` to ``<data_dir>/slurm-scripts/<job>-attempt-<n>.sbatch`` and runs ``sbatch
--parsable`` (``asyncio.create_subprocess_exec``, an argv, never a shell); the ref is
``<slurm job id>:<attempt dir>``. The batch script needs only bash and Slurm on the compute
nodes: ranks log to ``logs/rank-<r>.log``, a trap writes ``exit`` (``{exit_code, end,
reason}``). The data directory must be on a filesystem the nodes see at the same path.

sbatch gets a built environment, not the service's (which holds the hub token): ``PATH``
(``path_prepend``, by default the service Python's bin dir, then the service's PATH), a few
harmless variables (``HOME``, ``LANG``, ...) and the platform's per-attempt ones
(``YITONG_JOB_TOKEN``, ``YITONG_API_URL``, ``YITONG_ATTEMPT``); Slurm exports it to the job.

Whose job it is: when the service runs as root, every attempt is submitted as its owner's
account (``sbatch --uid --gid``, as batchspawner does): ``yt<tag>-<name>`` from ``accounts``, created on
first use (``run_as: account``), or the hub name itself where the cluster's accounts are the
people's own (``run_as: hub-name``, e.g. LDAP); ``run_as: service`` pins single-person. The batch script is kept where only the service
can write it (``<data_dir>/slurm-scripts``); the job directory is root's with the account's group
(1770, sticky: the job may add files, not replace the platform's), its outputs and attempt
directory the account's own. The service reads what the job wrote without following links. Not
root: jobs run as the service's own account (single-person).

Polling (``poll_many``): ``squeue -h -t all -j <ids>``; pending/running/completing is
``running`` (pending with Slurm's reason: "waiting in Slurm's queue: Resources"); ended or gone: the ``exit`` record gives the exit code and Slurm's state the reason
(TIMEOUT, CANCELLED, NODE_FAIL, OUT_OF_MEMORY); no record: the job completion log
(``jobcomp/filetxt``) gives state and exit code; nothing at all: ``vanished``. A failing squeue
(controller down) reports every job as still running rather than failing them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anyio import to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.accounts import Account, can_switch_users, ensure_account, instance_tag, lookup
from ..core.limits import clip
from . import ranklogs
from .backend import Backend, Launch, Polled, SubmissionUnknown
from .launch import RDZV_PORT
from .slurm import batch_script

log = logging.getLogger(__name__)

PASS_ENV = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "SLURM_CONF")
SQUEUE_FORMAT = "%i|%T|%N|%r"  # the reason last: it is the one field that may contain spaces

# Slurm job states (squeue %T, jobcomp JobState) that mean "not ended yet"
ACTIVE = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "SPECIAL_EXIT",
        "RESV_DEL_HOLD",
    }
)
# why an attempt ended, when Slurm ended it (COMPLETED and FAILED: the exit code says it)
REASONS = {
    "CANCELLED": "cancelled in Slurm (scancel)",
    "TIMEOUT": "max_run_time exceeded (Slurm TIMEOUT)",
    "NODE_FAIL": "a node of the job failed (Slurm NODE_FAIL)",
    "OUT_OF_MEMORY": "out of memory (Slurm OUT_OF_MEMORY): ask for more spec.memory",
    "PREEMPTED": "preempted by Slurm (PREEMPTED)",
    "BOOT_FAIL": "a node failed to boot (Slurm BOOT_FAIL)",
    "DEADLINE": "the Slurm deadline passed (DEADLINE)",
    "REVOKED": "revoked by Slurm (REVOKED)",
}


class SlurmSettings(BaseModel):
    """``backends.slurm`` in the settings file."""

    model_config = ConfigDict(extra="forbid")

    inventory: dict[str, Any] = Field(default_factory=dict, description="devices the cluster has (checked at submit)")
    partition: str = Field("", description="--partition; empty: the cluster's default partition")
    account: str = Field("{vc}", description="--account template ({vc}, {name}); empty: no --account")
    qos: str = Field(
        "",
        description="--qos template, e.g. 'yt-{vc}'; enforced only with slurmdbd, where the QOS "
        "must exist (empty: no --qos)",
    )
    bin_dir: str = Field("", description="directory of sbatch/squeue/scancel/scontrol; empty: PATH")
    path_prepend: list[str] | None = Field(
        None,
        description="directories put before the service's PATH in the job's PATH; null: the service Python's bin dir",
    )
    jobcomp_log: str = Field("/var/log/slurm/jobcomp.log", description="JobCompLoc of jobcomp/filetxt; empty: not read")
    command_timeout: float = Field(60.0, gt=0, description="seconds one Slurm command may take")
    unknown_settle: float = Field(
        20.0,
        ge=0,
        description="seconds squeue must have shown no trace of a submit the controller did not answer before it is"
        " submitted anew (a request slurmctld took in while stopped or hung may still be queued that long after;"
        " twice its MessageTimeout)",
    )
    run_as: str = Field(
        "account",
        pattern="^(account|hub-name|service)$",
        description="as root, whose uid jobs run with: 'account' (yt<tag>-<name>, created on first use), "
        "'hub-name' (the hub name is the cluster account) or 'service' (single-person: "
        "the service's own); not root: always the service's",
    )

    @classmethod
    def of(cls, settings: Any) -> SlurmSettings:
        section = (getattr(settings, "backends", None) or {}).get("slurm") if settings is not None else None
        raw = section.model_dump() if section is not None and hasattr(section, "model_dump") else dict(section or {})
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, i['loc']))}: {i['msg']}" for i in e.errors())
            raise ValueError(f"backends.slurm: {problems}") from None

    def job_path(self, service_path: str) -> str:
        first = self.path_prepend if self.path_prepend is not None else [str(Path(sys.executable).parent)]
        return os.pathsep.join([*first, service_path] if service_path else first)


# ---- pure helpers (tested against literal text) ----


@dataclass(frozen=True)
class SlurmJob:
    state: str  # first word of %T / JobState: RUNNING, CANCELLED, ...
    nodes: str = ""  # Slurm hostlist, e.g. "n[01-03]"
    reason: str = ""  # pending reason, "None" when running
    exit_code: int | None = None
    end: str | None = None


def parse_ref(ref: str) -> tuple[str, Path]:
    slurm_id, path = ref.split(":", 1)
    return slurm_id, Path(path)


def parse_squeue(text: str) -> dict[str, SlurmJob]:
    """``squeue -h -o '%i|%T|%N|%r'`` -> {job id: SlurmJob}."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split("|", 3)
        if len(parts) == 4 and parts[0]:
            out[parts[0]] = SlurmJob(parts[1].split()[0] if parts[1] else "", parts[2], parts[3])
    return out


def exit_status(text: str) -> int | None:
    """Slurm's ``ExitCode=<rc>:<signal>`` as one number (a signal is 128 + signal, like a shell)."""
    m = re.fullmatch(r"(\d+):(\d+)", text)
    if not m:
        return None
    rc, sig = int(m.group(1)), int(m.group(2))
    return 128 + sig if sig else rc


def parse_jobcomp(text: str, slurm_id: str, workdir: str) -> SlurmJob | None:
    """The last line of a ``jobcomp/filetxt`` log about job ``slurm_id`` run in ``workdir`` (job ids
    restart when Slurm's state is wiped; the directory tells this platform's job from another)."""
    found = None
    for line in text.splitlines():
        if not line.startswith(f"JobId={slurm_id} "):
            continue
        where = re.search(r" WorkDir=(\S*)", line)
        if not where or where.group(1) != workdir:
            continue
        state = re.search(r" JobState=(\S+)", line)
        codes = re.findall(r" ExitCode=(\S+)", line)
        end = re.search(r" EndTime=(\S+)", line)
        found = SlurmJob(
            state.group(1) if state else "",
            reason="",
            exit_code=exit_status(codes[-1]) if codes else None,
            end=end.group(1) if end else None,
        )
    return found


def expand_hostlist(nodes: str) -> list[str]:
    """``n[01-02,5],gpu1`` -> ``["n01", "n02", "n5", "gpu1"]`` (what ``scontrol show hostnames`` does)."""
    out: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(nodes + ","):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            if nodes[start:i]:
                out += _expand_one(nodes[start:i])
            start = i + 1
    return out


def _expand_one(host: str) -> list[str]:
    m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", host)
    if not m:
        return [host]
    prefix, ranges, rest = m.groups()
    names = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or not (hi or lo).isdigit():
            return [host]  # not a range this parser knows: shown as Slurm wrote it
        names += [f"{prefix}{n:0{len(lo)}d}" for n in range(int(lo), int(hi or lo) + 1)]
    return [n + tail for n in names for tail in _expand_one(rest)] if rest else names


def classify(slurm_id: str, job: SlurmJob | None, record: dict[str, Any] | None, where: str = "") -> Polled:
    """One attempt's state from what squeue (or the completion log) says and its ``exit`` record."""
    ended = job is not None and (job.state in REASONS or job.state in ("COMPLETED", "FAILED"))
    if job is not None and not ended:  # ACTIVE, or a state this code does not know: not over yet
        info = {"slurm_state": job.state, "hosts": expand_hostlist(job.nodes) if job.nodes else []}
        if job.state == "PENDING":  # Slurm's reason becomes the job's (the manager shows it)
            info["pending"] = job.reason
            why = f": {job.reason}" if job.reason and job.reason != "None" else ""
            return Polled("running", reason=f"waiting in Slurm's queue{why}", info=info)
        return Polled("running", info=info)
    state = job.state if job else None
    why = REASONS.get(state or "", "")
    if record is not None:
        rc = record.get("exit_code")
        if rc == 0:
            return Polled("succeeded", 0, "", record.get("end"), {"slurm_state": state})
        return Polled("failed", rc, why or record.get("reason") or "", record.get("end"), {"slurm_state": state})
    if job is not None:
        rc = job.exit_code if job.exit_code is not None else (0 if state == "COMPLETED" else None)
        if state == "COMPLETED" and rc == 0:
            return Polled("succeeded", 0, "", job.end, {"slurm_state": state})
        reason = why or f"Slurm job {slurm_id} ended {state} without an exit record"
        return Polled("failed", rc, reason, job.end, {"slurm_state": state})
    return Polled("vanished", None, f"Slurm job {slurm_id} is gone without an exit record{where}")


def access_text(slurm_id: str, hosts: list[str], here: Path) -> str:
    if not hosts:
        return f"Slurm job {slurm_id} (no nodes assigned yet); files under {here}"
    return (
        f"Slurm job {slurm_id} on {', '.join(hosts)}; `srun --jobid={slurm_id} --overlap --pty bash` "
        f"to get a shell; files under {here}"
    )


def read_exit(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(ranklogs.read_nofollow(path, "exit", 0, 1 << 16))
    except (FileNotFoundError, NotADirectoryError, ValueError, OSError):
        return None


#: what Slurm's commands say when the controller cannot be reached or does not answer in time
UNREACHABLE = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Zero Bytes were transmitted|Connection refused"
    r"|Communication connection failure|slurm_receive_msg|Slurm backup controller in standby|Transport endpoint",
    re.I,
)


def unreachable(message: str) -> bool:
    """Whether a Slurm command's error means the controller did not answer (pure)."""
    return bool(UNREACHABLE.search(message))


def said(message: str) -> str:
    """A command's error on one line, clipped, for a job's reason."""
    return clip(" ".join(message.split()), 300)


def sbatch_argv(script: str, account: Account | None) -> list[str]:
    """``sbatch`` for a script; as the owner's account when the service may switch users."""
    argv = ["sbatch", "--parsable"]
    if account is not None:
        argv += [f"--uid={account.uid}", f"--gid={account.gid}"]
    return [*argv, script]


def _real_dir(path: Path) -> None:
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise SlurmError(f"{path} is not a directory (a link or file put there by a job?): refusing to use it")


def prepare_dirs(workdir: Path, here: Path, outputs: str, account: Account | None) -> None:
    """The job's directories; with an account: workdir root:<group> 1770, outputs (each part) and
    the attempt directory with its logs owned by the account (never through a link)."""
    (here / "logs").mkdir(parents=True, exist_ok=True)
    (workdir / outputs).mkdir(parents=True, exist_ok=True)
    if account is None:
        return
    _real_dir(workdir)
    os.chown(workdir, 0, account.gid, follow_symlinks=False)
    os.chmod(workdir, 0o1770)
    parts = [workdir / Path(*Path(outputs).parts[: i + 1]) for i in range(len(Path(outputs).parts))]
    for path in [*parts, here, here / "logs"]:
        _real_dir(path)
        os.chown(path, account.uid, account.gid, follow_symlinks=False)
        os.chmod(path, 0o700)


def attempt_dir(workdir: Path, attempt: int) -> Path:
    return workdir / f"attempt-{attempt}"


class SlurmError(RuntimeError):
    pass


class SlurmBackend(Backend):
    name = "slurm"
    jobcomp_tail = 64 << 20  # bytes of the completion log read, from its end

    def __init__(self, data_dir: Path, settings: Any = None) -> None:
        super().__init__(Path(data_dir).absolute(), settings)
        self.config = SlurmSettings.of(settings)
        self.unknown_settle = self.config.unknown_settle
        self._hosts: dict[str, list[str]] = {}  # slurm id -> hosts, as the last poll saw them

    # ---- running Slurm's commands ----

    def bin(self, name: str) -> str:
        return os.path.join(self.config.bin_dir, name) if self.config.bin_dir else name

    async def run(self, *argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            self.bin(argv[0]),
            *argv[1:],
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.config.command_timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise SlurmError(f"{argv[0]} did not answer within {self.config.command_timeout:g}s") from None
        code = proc.returncode if proc.returncode is not None else -1  # communicate() waited for the exit
        return code, out.decode(errors="replace"), err.decode(errors="replace").strip()

    def job_environment(self, launch: Launch, account: Account | None = None) -> dict[str, str]:
        env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
        env["PATH"] = self.config.job_path(os.environ.get("PATH", ""))
        if account is not None:
            env.update(HOME=account.home, USER=account.name, LOGNAME=account.name)
        env.update(launch.env)
        return env

    def job_account(self, user: str) -> Account | None:
        """The owner's account when this service runs as root (blocking: may run ``useradd``)."""
        if not user or self.config.run_as == "service" or not can_switch_users():
            return None
        if self.config.run_as == "hub-name":
            found = lookup(user)
            if found is None or found.uid == 0:
                raise SlurmError(f"{user} has no (non-root) account on this machine (backends.slurm.run_as: hub-name)")
            return found
        tag = getattr(getattr(self.settings, "service", None), "account_tag", "") or instance_tag(
            os.path.realpath(self.data_dir)
        )
        return ensure_account(user, self.data_dir / "home" / user, self.data_dir / "secrets", tag)

    def script_path(self, here: Path) -> Path:
        """``<data_dir>/slurm-scripts/<job>-attempt-<n>.sbatch``: out of the job's reach."""
        return self.data_dir / "slurm-scripts" / f"{here.parent.name}-{here.name}.sbatch"

    # ---- the Backend interface ----

    async def submit(self, launch: Launch) -> str:
        here = attempt_dir(launch.workdir.absolute(), launch.attempt)
        names = {"vc": launch.spec.vc, "name": launch.spec.name}
        script = batch_script(
            launch.spec,
            launch.job_id,
            account=self.config.account.format_map(names),
            qos=self.config.qos.format_map(names),
            partition=self.config.partition,
            workdir=str(launch.workdir.absolute()),
            input_paths=launch.input_paths,
            attempt_dir=str(here),
            cwd=str(launch.cwd),
            devices=self.devices,
        )

        def write() -> Account | None:
            account = self.job_account(launch.user)
            scripts = self.script_path(here).parent
            scripts.mkdir(parents=True, exist_ok=True, mode=0o700)
            if account is not None:
                jobs_root = launch.workdir.absolute().parent
                os.chmod(jobs_root, stat.S_IMODE(os.stat(jobs_root).st_mode) | stat.S_IXOTH)  # reachable, not listable
            prepare_dirs(launch.workdir.absolute(), here, launch.spec.outputs, account)
            self.script_path(here).write_text(script)
            return account

        account = await to_thread.run_sync(write)
        try:
            rc, out, err = await self.run(
                *sbatch_argv(str(self.script_path(here)), account), env=self.job_environment(launch, account)
            )
        except (SlurmError, OSError) as e:  # no answer in time: it may have been queued even so
            raise SubmissionUnknown(f"the Slurm controller did not answer sbatch ({e})") from None
        if rc != 0 and unreachable(err or out):
            raise SubmissionUnknown(f"the Slurm controller is unreachable (sbatch: {said(err or out)})")
        if rc != 0:
            raise SlurmError(f"sbatch failed: {err or out}".strip())
        slurm_id = out.strip().split(";", 1)[0]
        if not slurm_id.isdigit():
            raise SlurmError(f"sbatch answered {out.strip()!r}, not a job id")
        return f"{slurm_id}:{here}"

    async def poll(self, ref: str) -> Polled:
        return (await self.poll_many([ref]))[ref]

    async def poll_many(self, refs: list[str]) -> dict[str, Polled]:
        if not refs:
            return {}
        parsed = {ref: parse_ref(ref) for ref in refs}
        ids = sorted({sid for sid, _ in parsed.values()}, key=lambda s: (len(s), s))
        try:
            rc, out, err = await self.run("squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", SQUEUE_FORMAT)
        except (SlurmError, OSError) as e:
            rc, out, err = -1, "", str(e)
        if rc != 0 and "Invalid job id" not in err:
            log.warning("squeue failed (%s); jobs are left as they are", err)
            why = "the Slurm controller is unreachable" if unreachable(err) else "Slurm could not be asked"
            reason = f"{why} (squeue: {said(err)}); its state is asked again"
            return {ref: Polled("running", reason=reason, info={"error": err}) for ref in refs}
        seen = parse_squeue(out) if rc == 0 else {}
        ended = [ref for ref, (sid, _) in parsed.items() if sid not in seen or seen[sid].state not in ACTIVE]
        records = await to_thread.run_sync(lambda: {ref: read_exit(parsed[ref][1]) for ref in ended})
        lost = [ref for ref in ended if records[ref] is None and parsed[ref][0] not in seen]
        if lost:
            seen_later = await to_thread.run_sync(self._from_jobcomp, [parsed[ref] for ref in lost])
            seen = {**seen_later, **seen}
        result = {}
        for ref, (sid, here) in parsed.items():
            where = f" in {here} and no entry in {self.config.jobcomp_log or 'a completion log'}"
            polled = classify(sid, seen.get(sid), records.get(ref), where)
            if polled.info.get("hosts"):
                self._hosts[sid] = polled.info["hosts"]
            result[ref] = polled
        return result

    def _from_jobcomp(self, lost: list[tuple[str, Path]]) -> dict[str, SlurmJob]:
        path = self.config.jobcomp_log
        if not path:
            return {}
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - self.jobcomp_tail))
                text = f.read().decode(errors="replace")
        except OSError as e:
            log.warning("cannot read the Slurm completion log %s: %s", path, e)
            return {}
        found = {}
        for sid, here in lost:
            job = parse_jobcomp(text, sid, str(here.parent))
            if job is not None:
                found[sid] = job
        return found

    async def cancel(self, ref: str) -> None:
        slurm_id, _here = parse_ref(ref)
        try:
            rc, _out, err = await self.run("scancel", slurm_id)
        except (SlurmError, OSError) as e:
            rc, err = -1, str(e)
        if rc != 0:  # already ended is fine; anything else is only logged (the poll tells the outcome)
            log.info("scancel %s: %s", slurm_id, err)

    async def read_log(self, ref: str, rank: int, offset: int = 0) -> bytes:
        return await to_thread.run_sync(ranklogs.read, parse_ref(ref)[1], rank, offset)

    async def ranks(self, ref: str) -> list[int]:
        return await to_thread.run_sync(ranklogs.ranks, parse_ref(ref)[1])

    def describe(self, ref: str) -> dict[str, Any]:
        slurm_id, here = parse_ref(ref)
        hosts = self._hosts.get(slurm_id, [])
        return {"hosts": hosts, "ports": {"rdzv": RDZV_PORT}, "access": access_text(slurm_id, hosts, here)}

    async def adopt(self, job_id: int, attempt: int) -> str | None:
        return await self._find(attempt_dir(self.data_dir / "jobs" / str(job_id), attempt))

    async def _find(self, here: Path) -> str | None:
        """The Slurm job of an attempt directory: queued or running (squeue by the script's job name,
        matched on the script's path), else ended (its ``slurm-<id>.out``)."""
        script = self.script_path(here)

        def name_and_outputs() -> tuple[str | None, list[str]]:
            try:
                text = script.read_text()
            except FileNotFoundError:
                return None, []
            m = re.search(r"^#SBATCH --job-name=(\S+)$", text, re.M)
            outs = sorted(p.name[6:-4] for p in here.glob("slurm-*.out") if p.name[6:-4].isdigit())
            return (m.group(1) if m else None), outs

        name, outs = await to_thread.run_sync(name_and_outputs)
        if name is None:
            return None  # never submitted
        try:
            rc, out, err = await self.run("squeue", "-h", "-t", "all", "-n", name, "-o", "%i|%o")
        except (SlurmError, OSError) as e:
            rc, out, err = -1, "", str(e)
        if rc != 0 and not outs:  # no answer, and no sign that it ran: Slurm may still have it
            raise SubmissionUnknown(f"the Slurm controller is unreachable (squeue: {said(err)})")
        for line in out.splitlines() if rc == 0 else []:
            sid, _, command = line.strip().partition("|")
            if command.split(" ", 1)[0] == str(script):
                return f"{sid}:{here}"
        return f"{outs[-1]}:{here}" if outs else None
