"""Model endpoints in multi-user mode, attacked from inside (docs/security.md, "Model endpoints").

The platform service runs as a real root process in multi-user mode (``MultiUser`` of
tests/services/core/test_confinement.py: two fresh hub users whose accounts ``yt-cf...`` are
removed at teardown). The victim deploys a scikit-learn model (trained here by MLServer's own
environment) and calls it through the platform's V2 route; every replica is MLServer 1.7.1
running as its owner's account (models/replica_server.py). The attacker, from real jobs of its
own account:

- squats before the victim's replica starts (its job held in the queue by the VC's quota): binds
  MLServer's default ports 8080-8082 on every address and tries to bind the replica's socket in
  its folder; no request ever reaches the squatter, and the victim's inference is answered by
  the victim's model;
- tries to read the replica's settings and model files, list its folders, and connect to its
  socket directly;
- points its own endpoint's socket at the victim's replica (a symlink in its own replica's
  folder), once after its replica joined the route and once before its replica starts: the
  route and the readiness check see the listener is another account's process and call neither
  (with that check removed the victim's model answers the attacker through the attacker's
  endpoint).

And, as root: the replica runs as the victim's account, listens on no TCP port at all, holds none
of the platform's secrets in its environment, and refuses to start when it cannot read its
settings (``mlserver start`` would serve its defaults on 0.0.0.0).
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import time
from pathlib import Path

import pytest

from tests.services.core.test_confinement import MultiUser, needs_root
from tests.services.models.test_endpoints import MLSERVER_PY, PROBE, TRAIN
from yitong_services.models import mlserver

pytestmark = [
    needs_root,
    pytest.mark.skipif(not MLSERVER_PY.exists(), reason="run `make mlserver` (MLServer's own environment)"),
]
TERMINAL = {"succeeded", "failed", "cancelled"}

# Run as the attacker (a job of its own): squat, then attack the folder the test names; one JSON report.
SQUAT = r"""
import errno, json, os, select, socket, time
out = os.environ["YITONG_OUTPUT_DIR"]
listeners = {}
for port in (8080, 8081, 8082):
    for family, host in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0"), (socket.AF_INET, "127.0.0.1")):
        s = socket.socket(family)
        try:
            s.bind((host, port))
            s.listen(16)
            listeners[f"{host}:{port}"] = s
            break
        except OSError:
            s.close()
print("SQUATTING " + json.dumps(sorted(listeners)), flush=True)
while not os.path.exists(os.path.join(out, "target.json")):
    time.sleep(0.1)
root = json.load(open(os.path.join(out, "target.json")))["root"]
report = {}
def attempt(name, fn):
    try:
        fn()
        report[name] = "ALLOWED"
    except OSError as e:
        report[name] = "denied: " + errno.errorcode.get(e.errno, str(e.errno))
def unix(op, path):
    s = socket.socket(socket.AF_UNIX)
    try:
        getattr(s, op)(path)
        if op == "bind":
            s.listen(16)
            listeners["unix"] = s
    except OSError:
        s.close()
        raise
attempt("bind the replica's socket", lambda: unix("bind", os.path.join(root, "http.sock")))
for name in ("settings.json", "model-settings.json", "model/model.joblib"):
    attempt("read " + name, lambda name=name: open(os.path.join(root, name), "rb").read())
for name, path in (("replica", root), ("endpoint", os.path.dirname(root)), ("endpoints", os.path.dirname(os.path.dirname(root)))):
    attempt("list the " + name + " folder", lambda path=path: os.listdir(path))
print("REPORT " + json.dumps(report), flush=True)
accepted = []
while not os.path.exists(os.path.join(out, "stop")):
    ready, _, _ = select.select(list(listeners.values()), [], [], 0.2)
    for s in ready:
        conn, _ = s.accept()
        conn.settimeout(1)
        try:
            accepted.append(conn.recv(200).decode("latin-1"))
        except OSError:
            accepted.append("")
        conn.close()
print("ACCEPTED " + json.dumps(accepted), flush=True)
"""

# Run as the attacker once the victim's replica answers: connect to it directly.
CONNECT = r"""
import errno, json, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    s.sendall(b"GET /v2/models/eb/ready HTTP/1.1\r\nHost: x\r\n\r\n")
    print("CONNECT ALLOWED " + s.recv(100).decode("latin-1"))
except OSError as e:
    print("CONNECT denied: " + errno.errorcode.get(e.errno, str(e.errno)))
"""

# Run as the attacker: its own replica's socket becomes a symlink to the victim's socket (the
# paths as arguments, or, with none, from the test's word in its outputs folder once given).
REDIRECT = r"""
import json, os, sys, time
if len(sys.argv) == 3:
    mine, theirs = sys.argv[1], sys.argv[2]
else:
    word = os.path.join(os.environ["YITONG_OUTPUT_DIR"], "target.json")
    while not os.path.exists(word):
        time.sleep(0.1)
    mine, theirs = json.load(open(word))["paths"]
if os.path.lexists(mine):
    os.unlink(mine)
os.symlink(theirs, mine)
print("REDIRECTED", os.readlink(mine), flush=True)
"""


def infer_body() -> dict:
    return {
        "inputs": [{"name": "predict", "datatype": "FP32", "shape": list(PROBE.shape), "data": PROBE.ravel().tolist()}]
    }


class Endpoints:
    """The multi-user service, and the calls this test makes on it."""

    def __init__(self, mu: MultiUser) -> None:
        self.mu = mu
        self.attacker, self.victim = mu.users
        self.started: list[tuple[str, int]] = []  # (who, job): cancelled at the end (jobs outlive the service)

    def start_job(self, who: str, name: str, code: str, *args: str, cpu: float = 0.1) -> int:
        body = {
            "name": name,
            "vc": "default",
            "environment": {"kernel": "python3"},
            "command": ["python", "-c", code, *args],
            "cpu": cpu,
            "memory": "64Mi",
        }
        r = self.mu.call(who, "POST", "jobs", json=body)
        assert r.status_code == 201, r.text
        self.started.append((who, int(r.json()["id"])))
        return int(r.json()["id"])

    def job(self, who: str, job_id: int, states, timeout: float = 120) -> dict:
        deadline = time.monotonic() + timeout
        while (job := self.mu.call(who, "GET", f"jobs/{job_id}").json())["state"] not in states:
            assert time.monotonic() < deadline, (job, self.log(who, job_id), self.mu.log.read_text()[-3000:])
            time.sleep(0.2)
        return job

    def log(self, who: str, job_id: int) -> str:
        return self.mu.call(who, "GET", f"jobs/{job_id}/logs?rank=0").text

    def wait_log(self, who: str, job_id: int, word: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while word not in (text := self.log(who, job_id)):
            assert time.monotonic() < deadline, (text, self.mu.log.read_text()[-3000:])
            time.sleep(0.2)
        return text.split(word, 1)[1].split("\n", 1)[0]

    def run(self, who: str, name: str, code: str, *args: str) -> str:
        job_id = self.start_job(who, name, code, *args)
        job = self.job(who, job_id, TERMINAL)
        text = self.log(who, job_id)
        assert job["state"] == "succeeded", (job, text)
        return text

    def endpoint(self, who: str, name: str, done, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while not done(e := self.mu.call(who, "GET", f"endpoints/{name}").json()):
            assert time.monotonic() < deadline, (e, self.mu.log.read_text()[-4000:])
            time.sleep(0.3)
        return e

    def deploy(self, who: str, name: str) -> dict:
        body = {"name": name, "model": "default/iris@1", "profile": "cpu-small"}
        r = self.mu.call(who, "POST", "endpoints", json=body)
        assert r.status_code == 201, r.text
        return r.json()

    def folder(self, name: str) -> Path:
        [root] = (self.mu.data / "endpoints" / name).glob("v1-*")
        return root

    def account(self, who: str) -> pwd.struct_passwd:
        """The person's system account (the service creates it on first use)."""
        name = self.mu.call(who, "GET", "spawn-options").json()["account"]["name"]
        return pwd.getpwnam(name)

    def give(self, job_id: int, who: str, name: str, doc: dict) -> None:
        """A file in a job's outputs folder, the job's account's (the test's word to the job)."""
        path = self.mu.data / "jobs" / str(job_id) / "outputs" / name
        path.write_text(json.dumps(doc))
        pw = self.account(who)
        os.chown(path, pw.pw_uid, pw.pw_gid)

    def hog(self, who: str, cpu: float) -> int:
        """A running job holding ``cpu`` of the VC's quota (4 cpus): what is deployed next waits."""
        job_id = self.start_job(who, "hog", "import time; time.sleep(600)", cpu=cpu)
        self.job(who, job_id, {"running"})
        return job_id

    def cancel(self, who: str, job_id: int) -> None:
        assert self.mu.call(who, "POST", f"jobs/{job_id}/cancel").status_code == 202


def register(mu: MultiUser, who: str, tmp_path: Path) -> list[int]:
    """Train in MLServer's environment and register as default/iris v1; the expected classes."""
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Models

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    out = subprocess.run([MLSERVER_PY, "-c", TRAIN, str(model_dir)], capture_output=True, text=True, check=True)
    with Client(mu.base.rstrip("/"), mu.tokens[who]) as c:
        signature = {"inputs": [{"name": "predict", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}
        v = Models(c).register(
            "default/iris", model_dir, framework="sklearn", format="joblib", signature=signature, progress=None
        )
    assert v["number"] == 1
    return [int(x) for x in out.stdout.split()[0].split(",")]


def replica_process(root: Path) -> int:
    """The pid of the MLServer serving from ``root`` (``python -P replica_server.py <root> ...``)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if len(argv) > 3 and argv[1] == b"-P" and argv[2].endswith(b"replica_server.py") and argv[3] == bytes(root):
                return int(entry.name)
    raise AssertionError(f"no replica process serves {root}")


def listeners(pid: int) -> dict[str, list[str]]:
    """The sockets ``pid`` listens on: TCP (``/proc/net/tcp``, ``tcp6``: LISTEN rows whose inode
    is one of its descriptors) and unix (``/proc/net/unix``)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found: dict[str, list[str]] = {"tcp": [], "unix": []}
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:
                found["tcp"].append(cols[1])
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 8 and cols[6] in inodes and int(cols[3], 16) & 0x10000:  # __SO_ACCEPTCON: listening
            found["unix"].append(cols[7])
    return found


def processes_of(uids: set[int]) -> list[int]:
    """The processes running as one of ``uids`` (the people's jobs and replicas)."""
    left = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if entry.stat().st_uid in uids:
                left.append(int(entry.name))
        except OSError:
            continue
    return left


@pytest.fixture
def endpoints(hub, tmp_path):
    mu = MultiUser(hub, tmp_path)
    ep = Endpoints(mu)
    try:
        mu.start()
        yield ep
    finally:
        if getattr(mu, "proc", None) is not None and mu.proc.poll() is None:
            for e in mu.call("admin", "GET", "endpoints").json():
                mu.call("admin", "DELETE", f"endpoints/{e['name']}")
            for who, job_id in ep.started:
                mu.call(who, "POST", f"jobs/{job_id}/cancel")
            uids = {ep.account(who).pw_uid for who in mu.users}
            deadline = time.monotonic() + 30  # the jobs' and replicas' processes end before their accounts go
            while time.monotonic() < deadline and processes_of(uids):
                time.sleep(0.3)
        mu.stop()


def test_endpoints_work_multi_user_and_hold_against_another_account(endpoints: Endpoints, tmp_path):
    ep, mu = endpoints, endpoints.mu
    attacker, victim = ep.attacker, ep.victim
    victim_pw, attacker_pw = ep.account(victim), ep.account(attacker)  # created on first use
    expected = register(mu, victim, tmp_path)

    # squatting: the attacker holds MLServer's default ports, and the victim's replica waits in
    # the queue (the VC's quota) until the attacker has tried its folder
    hog = ep.hog(attacker, 3.5)
    squatter = ep.start_job(attacker, "squat", SQUAT)
    squatted = json.loads(ep.wait_log(attacker, squatter, "SQUATTING "))
    e = ep.deploy(victim, "eb")
    e = ep.endpoint(victim, "eb", lambda e: e["state"] == "queued")
    root = ep.folder("eb")
    ep.give(squatter, attacker, "target.json", {"root": str(root)})
    report = json.loads(ep.wait_log(attacker, squatter, "REPORT "))
    assert report == {
        "bind the replica's socket": "denied: EACCES",
        "read settings.json": "denied: EACCES",
        "read model-settings.json": "denied: EACCES",
        "read model/model.joblib": "denied: EACCES",
        "list the replica folder": "denied: EACCES",
        "list the endpoint folder": "denied: EACCES",
        "list the endpoints folder": "denied: EACCES",
    }, report
    ep.cancel(attacker, hog)
    e = ep.endpoint(victim, "eb", lambda e: e["state"] in ("ready", "failed"))
    assert e["state"] == "ready", e

    # the victim's inference through the platform's route: the victim's model answers
    r = mu.call(victim, "POST", "endpoints/eb/v2/models/eb/infer", json=infer_body())
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == expected
    for _ in range(5):
        assert mu.call(victim, "POST", "endpoints/eb/v2/models/eb/infer", json=infer_body()).status_code == 200
    ep.give(squatter, attacker, "stop", {})
    ep.job(attacker, squatter, TERMINAL)
    accepted = json.loads(ep.wait_log(attacker, squatter, "ACCEPTED "))
    assert accepted == [], accepted  # not one connection, let alone a request, reached the squatter
    print(f"squatted {squatted}; the squatter was sent nothing")

    # the replica, as root sees it: the victim's account, its own 0700 folder, one unix socket
    # and no TCP listener, none of the platform's secrets in its environment
    pid = replica_process(root)
    status = Path(f"/proc/{pid}/status").read_text()
    uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
    assert set(uids) == {str(victim_pw.pw_uid)}
    st = os.stat(root)
    assert (st.st_uid, st.st_mode & 0o777) == (victim_pw.pw_uid, 0o700)
    for f in ("settings.json", "model-settings.json"):
        assert (os.stat(root / f).st_uid, os.stat(root / f).st_mode & 0o777) == (victim_pw.pw_uid, 0o600)
    assert os.stat(mu.data / "endpoints").st_mode & 0o777 == 0o711
    assert os.stat(mu.data / "endpoints" / "eb").st_uid == 0
    by = mu.call(victim, "GET", "health").json().get("limits", {}).get("by", "")
    if by.startswith("cgroup"):  # a job like any: its attempt's cgroup holds it to the profile (1 cpu, 2Gi)
        job = e["replicas"][0]["job"]
        assert f"/job-{job}-1" in Path(f"/proc/{pid}/cgroup").read_text()
    held = listeners(pid)
    assert held["tcp"] == [] and held["unix"] == [mlserver.SOCKET], held
    environ = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
    names = {kv.split("=", 1)[0] for kv in environ if kv}
    assert not {n for n in names if n.startswith(("JUPYTERHUB_", "YITONG_", "JPY_", "CONFIGPROXY_"))}, names
    service_token = (mu.data / "secrets" / "service-token").read_text().strip()
    for secret in (service_token, mu.hub.service_token, mu.tokens[victim]):
        assert secret not in "\0".join(environ)

    # the attacker connects to the replica directly: refused by the folder's mode
    text = ep.run(attacker, "connect", CONNECT, str(root / mlserver.SOCKET))
    assert "CONNECT denied: EACCES" in text, text

    # a replica that cannot read its settings refuses to start (as the attacker: the victim's files)
    refused = subprocess.run(
        mlserver.command(root),
        capture_output=True,
        text=True,
        user=attacker_pw.pw_uid,
        group=attacker_pw.pw_gid,
        extra_groups=[],
        cwd="/",
    )
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert f"replica not started: cannot read {root}/settings.json: Permission denied" in refused.stderr

    # the attacker's own endpoint, its socket pointed at the victim's replica once it is routed:
    # the route sees the listener is the victim's process and sends it nothing
    ep.deploy(attacker, "ea")
    ea = ep.endpoint(attacker, "ea", lambda e: e["state"] in ("ready", "failed"))
    assert ea["state"] == "ready", ea
    mine = ep.folder("ea") / mlserver.SOCKET
    ep.run(attacker, "redirect", REDIRECT, str(mine), str(root / mlserver.SOCKET))
    r = mu.call(attacker, "POST", "endpoints/ea/v2/models/eb/infer", json=infer_body())
    assert r.status_code == 503, r.text
    sentence = r.json()["error"]
    assert sentence.startswith("endpoint ea is not answering: replica v1 (job ")
    assert f"was not called: {mine} is held by another account's process (uid {victim_pw.pw_uid}, pid {pid})" in (
        sentence
    )
    assert f"not uid {attacker_pw.pw_uid}" in sentence

    # and before its replica starts: the readiness check refuses the listener, the replica's job
    # is stopped and the endpoint says why
    planter = ep.start_job(attacker, "plant", REDIRECT)  # started first: the queue admits in order
    ep.job(attacker, planter, {"running"})
    hog = ep.hog(attacker, 1.5)  # with eb's and ea's 2 cpus: ec's replica waits
    ep.deploy(attacker, "ec")
    ep.endpoint(attacker, "ec", lambda e: e["state"] == "queued")
    ep.give(
        planter, attacker, "target.json", {"paths": [str(ep.folder("ec") / mlserver.SOCKET), str(root / "http.sock")]}
    )
    ep.wait_log(attacker, planter, "REDIRECTED")
    ep.cancel(attacker, hog)
    ec = ep.endpoint(attacker, "ec", lambda e: e["state"] == "failed")
    assert "refused: its socket" in ec["reason"] and "is held by another account's process" in ec["reason"], ec
    assert f"(uid {victim_pw.pw_uid}," in ec["reason"] and "no request was sent to it" in ec["reason"], ec
    # the victim's endpoint still answers, as before
    r = mu.call(victim, "POST", "endpoints/eb/v2/models/eb/infer", json=infer_body())
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == expected, r.text
