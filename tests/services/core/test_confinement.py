"""Confinement on one machine (docs/security.md): who runs user code, and the platform's file modes.

The attack test starts the platform service as a real root process in multi-user mode (an
interpreter every account can run: ``shared_python``), with two fresh hub users whose system
accounts (``yt<tag>-cf...``, unique per run) are removed at teardown. A job of one of them tries,
from inside, everything a hostile job would: the platform's secrets, its database, the
service's ``/proc/<pid>/environ``, another person's job directory and home, and writing,
chmod, unlink, rename or hardlink-and-write of its own input file.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest
import yaml
from blake3 import blake3
from helpers import free_port, start_service
from shared_python import shared_bin

from tests.services.conftest import PREFIX, SETTINGS
from yitong_services.core import cgroups
from yitong_services.core.accounts import account_name, instance_tag
from yitong_services.core.confinement import MODES, ModeError, decide, message
from yitong_services.datasets import materialize

TERMINAL = {"succeeded", "failed", "cancelled"}

# Run by the job (its own account), with the shared interpreter; prints one JSON report.
ATTACK = r"""
import errno, json, os, sys
args = json.loads(sys.argv[1])
report = {"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(), "groups": os.getgroups()}
def attempt(name, fn):
    try:
        fn()
        report[name] = "ALLOWED"
    except OSError as e:
        report[name] = "denied: " + errno.errorcode.get(e.errno, str(e.errno))
def read(p):
    return lambda: open(p, "rb").read()
for i, p in enumerate(args["read"]):
    attempt("read " + p, read(p))
for p in args["list"]:
    attempt("list " + p, lambda p=p: os.listdir(p))
src = os.path.join(os.environ["YITONG_INPUT_DATA"], "data.txt")
here = os.environ["YITONG_OUTPUT_DIR"]
attempt("write input", lambda: open(src, "r+b").write(b"POISON"))
attempt("append input", lambda: open(src, "ab").write(b"POISON"))
attempt("chmod input", lambda: os.chmod(src, 0o666))
attempt("unlink input", lambda: os.unlink(src))
attempt("rename input", lambda: os.rename(src, src + ".moved"))
attempt("rename input out", lambda: os.rename(src, os.path.join(here, "moved")))
attempt("chmod input dir", lambda: os.chmod(os.path.dirname(src), 0o777))
attempt("create in input dir", lambda: open(os.path.join(os.path.dirname(src), "new"), "wb"))
def link_and_write():
    os.link(src, os.path.join(here, "link"))
    open(os.path.join(here, "link"), "r+b").write(b"POISON")
attempt("hardlink input and write", link_and_write)
attempt("read own input", read(src))
print("REPORT " + json.dumps(report), flush=True)
"""


# ---- pure: the mode and the account names ---------------------------------------------------


@pytest.mark.parametrize(
    "setting, euid, shared, expected",
    [
        ("auto", 0, True, "multi-user"),
        ("auto", 0, False, "single-person"),  # a Python under /root: people's accounts could not run it
        ("auto", 1000, True, "single-person"),
        ("single-person", 0, True, "single-person"),
        ("single-person", 1000, True, "single-person"),
        ("multi-user", 0, True, "multi-user"),
        ("multi-user", 0, False, "multi-user"),  # pinned: the start-up check logs why it will fail
    ],
)
def test_mode_decision(setting, euid, shared, expected):
    assert decide(setting, euid, shared) == expected


@pytest.mark.parametrize(
    "setting, euid, words",
    [
        ("multi-user", 1000, "needs the hub and the platform service to run as root"),
        ("both", 0, "must be one of auto, multi-user, single-person"),
    ],
)
def test_mode_refusals(setting, euid, words):
    with pytest.raises(ModeError, match=words):
        decide(setting, euid)
    assert MODES == ("auto", "multi-user", "single-person")


def test_mode_messages():
    assert "multi-user" in message("multi-user", 0, "root") and "own system account" in message("multi-user", 0, "root")
    laptop = message("single-person", 1000, "ana")
    assert (
        laptop.startswith("Yitong runs single-person: notebooks and jobs run as ana")
        and "start the hub as root" in laptop
    )
    pinned = message("single-person", 0, "root")
    assert "run as root" in pinned and "pinned" in pinned
    unshared = message("single-person", 0, "root", "the interpreter /root/.pyenv/versions/3.11.7/bin/python3.11")
    assert "the interpreter /root/.pyenv/versions/3.11.7/bin/python3.11 is not reachable by other accounts" in unshared


def test_auto_stays_single_person_where_accounts_cannot_reach_the_data(tmp_path):
    """As root, ``auto`` is multi-user only when people's accounts can reach the interpreter and
    the data directory: a data directory below a 0700 directory keeps it single-person."""
    from types import SimpleNamespace

    from yitong_services.core.confinement import mode_of, unreachable

    closed = tmp_path / "closed"
    (closed / "data").mkdir(parents=True)
    closed.chmod(0o700)
    settings = SimpleNamespace(data_dir=closed / "data", backends={})
    assert unreachable(settings) is not None and "above the data directory" in unreachable(settings)
    assert mode_of(settings, euid=0) == "single-person"
    closed.chmod(0o755)
    opened = SimpleNamespace(data_dir=Path("/var/tmp/yitong-reachable-check/data"), backends={})
    if unreachable(opened) is None:  # the interpreter is shared (built from /usr/bin/python3)
        assert mode_of(opened, euid=0) == "multi-user"


@pytest.mark.parametrize(
    "hub_name, account",
    [
        ("root", "yt-root"),
        ("daemon", "yt-daemon"),
        ("alice", "yt-alice"),
    ],
)
def test_account_names_never_system_accounts(hub_name, account):
    assert account_name(hub_name) == account


async def test_health_and_console_say_the_mode(service):
    r = await service.call(None, "GET", "health")
    assert r.json() == {  # the fixture pins single-person
        "status": "ok",
        "mode": "single-person",
        "limits": {"by": "none", "message": "Notebooks and jobs are not held to their size in single-person mode."},
    }
    page = await service.call("admin", "GET", f"{PREFIX}console")
    assert page.status_code == 200 and 'id="mode"' in page.text
    assert "Yitong runs single-person: notebooks and jobs run as" in page.text


async def test_spawn_options_name_no_account_single_person(service):
    r = await service.call("alice", "GET", "spawn-options")
    assert r.status_code == 200 and r.json()["account"] is None


# ---- real: a multi-user service as root, and a hostile job ----------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="multi-user mode needs root (CI runs as root)")


class MultiUser:
    def __init__(self, hub, tmp: Path, **extra) -> None:
        self.hub, self.tmp, self.port = hub, tmp, free_port()
        self.extra = extra  # more settings sections (tests/services/ssh: the gateway's)
        # every directory above the data directory must be searchable by the accounts (pytest's are 0700)
        self.data = Path(tempfile.mkdtemp(prefix="yitong-cf-", dir="/var/tmp")) / "data"
        self.data.parent.chmod(0o711)
        self.base = f"http://127.0.0.1:{self.port}{PREFIX}api/v1/"
        self.log = tmp / "service.log"
        tag = secrets.token_hex(3)
        self.users = [f"cfa{tag}", f"cfb{tag}"]
        self.tokens: dict[str, str] = {"admin": hub.tokens["admin"]}

    def start(self) -> None:
        hub = self.hub
        hub.api("POST", "/users", json={"usernames": self.users})
        hub.api("POST", "/groups/everyone/users", json={"users": self.users})
        for u in self.users:
            self.tokens[u] = hub.api("POST", f"/users/{u}/tokens", json={"note": "confinement"}).json()["token"]
        settings = {
            **SETTINGS,
            "database": {"url": f"sqlite:///{self.data / 'yitong.sqlite'}"},
            "backends": {"local": {"inventory": {}, "mode": "multi-user"}},
            "jobs": {"poll_interval": 0.2},
            "service": {"reconcile_interval": 0},
            **self.extra,
        }
        (self.tmp / "settings.yaml").write_text(yaml.safe_dump(settings))
        # the embedded layout's secrets (written by jupyterhub_config.py), left readable to check start fixes them
        (self.data / "secrets").mkdir(parents=True, mode=0o755)
        self.data.chmod(0o755)
        (self.data / "secrets").chmod(0o755)
        for name in ("service-token", "jupyterhub_cookie_secret"):
            (self.data / "secrets" / name).write_text(secrets.token_hex(16))
            (self.data / "secrets" / name).chmod(0o644)
        self.proc = start_service(
            shared_bin() / "python", self.tmp / "settings.yaml", self.data, self.port, hub, self.log
        )

    def stop(self) -> None:
        if getattr(self, "proc", None) and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        for u in self.users:
            self.hub.api("DELETE", f"/users/{u}")
        for entry in pwd.getpwall():  # every account this service created (homes under its data directory)
            if entry.pw_name.startswith("yt") and entry.pw_dir.startswith(str(self.data) + "/"):
                subprocess.run(["userdel", entry.pw_name], capture_output=True, check=False)
        layout = cgroups.detect()  # this platform's cgroups (core/cgroups.py) go with it
        if layout.kind != "none":
            cgroups.remove_parent(layout, cgroups.parent_name(self.data.absolute()))
        materialize.remove_tree(self.data.parent)

    def account(self, who: str) -> str:
        """``who``'s system account on this platform (its tag: the data directory's)."""
        return account_name(who, instance_tag(os.path.realpath(self.data)))

    def call(self, who: str, method: str, path: str, **kw) -> httpx.Response:
        return httpx.request(
            method, self.base + path, headers={"Authorization": f"token {self.tokens[who]}"}, timeout=60, **kw
        )

    def submit(self, who: str, body: dict) -> dict:
        r = self.call(
            who,
            "POST",
            "jobs",
            json={"vc": "default", "environment": {"kernel": "python3"}, "cpu": 0.1, "memory": "64Mi", **body},
        )
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + 120
        while True:
            job = self.call(who, "GET", f"jobs/{r.json()['id']}").json()
            if job["state"] in TERMINAL:
                return job
            assert time.monotonic() < deadline, (job, self.log.read_text()[-2000:])
            time.sleep(0.2)


@pytest.fixture
def multi_user(hub, tmp_path):
    m = MultiUser(hub, tmp_path)
    try:
        m.start()
        yield m
    finally:
        m.stop()


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@needs_root
def test_a_hostile_job_runs_as_its_owner_and_reaches_nothing_else(multi_user: MultiUser):
    mu = multi_user
    attacker, victim = mu.users
    assert mu.call(attacker, "GET", "health").json()["mode"] == "multi-user"

    # the victim's account and home (created by the service on first use), a private file in it,
    # and a finished job of theirs with an output
    account = mu.call(victim, "GET", "spawn-options").json()["account"]
    victim_pw = pwd.getpwnam(mu.account(victim))
    assert account == {
        "name": mu.account(victim),
        "uid": victim_pw.pw_uid,
        "gid": victim_pw.pw_gid,
        "home": str(mu.data.absolute() / "home" / victim),
        "pid_namespace": True,  # its server in a PID namespace of its own (core/pidns.py)
        # its server in a cgroup of its own (core/cgroups.py), under this instance's parent
        "cgroup": {"parent": cgroups.parent_name(mu.data.absolute()), "max_processes": 4096},
    }
    home = Path(account["home"])
    assert (os.stat(home).st_uid, _mode(home)) == (victim_pw.pw_uid, 0o700)
    victim_file = home / "private.txt"
    victim_file.write_text("victim's notes")
    os.chown(victim_file, victim_pw.pw_uid, victim_pw.pw_gid)
    code = "import os; open(os.path.join(os.environ['YITONG_OUTPUT_DIR'], 'secret.txt'), 'w').write('victim')"
    vjob = mu.submit(victim, {"name": "victim", "command": ["python", "-c", code]})
    assert vjob["state"] == "succeeded", (vjob, mu.log.read_text()[-2000:])
    vdir = mu.data / "jobs" / str(vjob["id"])
    assert (os.stat(vdir).st_uid, _mode(vdir)) == (victim_pw.pw_uid, 0o700)
    assert os.stat(vdir / "outputs" / "secret.txt").st_uid == victim_pw.pw_uid

    # the attacker's input: a dataset version with one file
    original = b"the bytes every job of this version reads\n"
    h = blake3(original).hexdigest()
    ds = f"cf{secrets.token_hex(3)}"
    assert mu.call(attacker, "POST", "datasets", json={"vc": "default", "name": ds}).status_code == 201
    pack = bytes.fromhex(h) + len(original).to_bytes(8, "big") + original
    assert mu.call(attacker, "POST", "objects/pack", content=pack).status_code == 200
    r = mu.call(
        attacker,
        "POST",
        f"datasets/default/{ds}/versions",
        json={"message": "", "parent": None, "files": [{"path": "data.txt", "size": len(original), "hash": h}]},
    )
    assert r.status_code in (200, 201), r.text

    secrets_dir = mu.data / "secrets"
    targets = {
        "read": [
            str(secrets_dir / "service-token"),
            str(secrets_dir / "jupyterhub_cookie_secret"),
            str(secrets_dir / "yitong_cookie_secret"),
            str(mu.data / "yitong.sqlite"),
            f"/proc/{mu.proc.pid}/environ",
            str(vdir / "outputs" / "secret.txt"),
            str(victim_file),
            str(mu.data / "cache" / "objects" / h[:2] / h),
        ],
        "list": [
            str(mu.data),
            str(secrets_dir),
            str(vdir),
            str(home),
            str(mu.data / "cache"),
            str(mu.data / "materialized"),
            str(mu.data / "store"),
        ],
    }
    job = mu.submit(
        attacker,
        {
            "name": "attack",
            "command": ["python", "-c", ATTACK, json.dumps(targets)],
            "inputs": [{"dataset": f"default/{ds}", "mount": "data"}],
        },
    )
    log = mu.call(attacker, "GET", f"jobs/{job['id']}/logs?rank=0").text
    assert job["state"] == "succeeded", (job, log, mu.log.read_text()[-2000:])
    report = json.loads(log.split("REPORT ", 1)[1])

    attacker_pw = pwd.getpwnam(mu.account(attacker))
    assert (report["uid"], report["euid"], report["gid"]) == (attacker_pw.pw_uid,) * 2 + (attacker_pw.pw_gid,)
    assert report["uid"] not in (0, os.geteuid()) and report["groups"] == []
    assert report.pop("read own input") == "ALLOWED"
    allowed = {k: v for k, v in report.items() if v == "ALLOWED"}
    assert not allowed, report
    attempts = [
        k
        for k in report
        if k.startswith(("read ", "list ", "write", "append", "chmod", "unlink", "rename", "create", "hardlink"))
    ]
    assert len(attempts) == len(targets["read"]) + len(targets["list"]) + 9

    # the bytes every other job and VC reads are unchanged, and verify is clean
    cached = mu.data / "cache" / "objects" / h[:2] / h
    assert cached.read_bytes() == original and _mode(cached) == 0o444 and os.stat(cached).st_uid == 0
    v = mu.call("admin", "POST", "storage/verify")
    assert v.status_code == 200 and not v.json()["corrupt"] and not v.json()["missing"], v.text

    # the attacker's own directory: its account's, 0700; its inputs the platform's, read-only
    adir = mu.data / "jobs" / str(job["id"])
    assert (os.stat(adir).st_uid, _mode(adir)) == (attacker_pw.pw_uid, 0o700)
    inputs = adir / "inputs-1" / "data"
    assert (os.stat(inputs).st_uid, _mode(inputs), _mode(inputs / "data.txt")) == (0, 0o555, 0o444)
    assert os.stat(inputs / "data.txt").st_ino == os.stat(cached).st_ino  # a link, not a copy

    # the platform's files: its account's only
    assert _mode(mu.data) == 0o711 and _mode(secrets_dir) == 0o700
    for f in secrets_dir.iterdir():
        if f.is_file():
            assert _mode(f) == 0o600, f
    assert _mode(mu.data / "yitong.sqlite") == 0o600
    for root in ("cache", "materialized", "store"):
        assert _mode(mu.data / root) == 0o700, root
    assert "Yitong runs multi-user" in mu.log.read_text()


@needs_root
def test_a_job_cannot_point_the_service_at_files_it_does_not_own(multi_user: MultiUser):
    """A job that replaces its rank log by a symlink to a secret gets a refusal, not the secret."""
    mu = multi_user
    attacker = mu.users[0]
    secret = mu.data / "secrets" / "service-token"
    code = (
        "import os, sys; d = os.path.dirname(os.environ['YITONG_OUTPUT_DIR']); "
        "p = os.path.join(d, 'attempt-1', 'logs', 'rank-0.log'); os.unlink(p); "
        f"os.symlink({str(secret)!r}, p)"
    )
    job = mu.submit(attacker, {"name": "symlink", "command": ["python", "-c", code]})
    assert job["state"] == "succeeded", (job, mu.log.read_text()[-2000:])
    log = mu.call(attacker, "GET", f"jobs/{job['id']}/logs?rank=0").text
    assert secret.read_text().strip() not in log and "not a plain file of this job's" in log
