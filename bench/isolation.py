"""What the host boundary costs (issue 29), on the whole embedded platform started as root in
multi-user mode, as `make run` starts the team's server.

    sudo .venv/bin/python bench/isolation.py [--quick] [--cases abcd] [--spawns 8] [--jobs 30]
                                             [--requests 1000] [--seconds 120]

Two platforms run side by side on this machine, each its own hub, proxy, service and data
directory under /var/tmp, each person its own account (``yt<tag>-<name>``): one with the
confinement on (the defaults: a cgroup per job attempt, notebook server and model replica with
its cpu, memory and ``max_processes`` limits, a PID namespace per workload), one with it off
(``backends.local.cgroups: false``, ``pid_namespaces: false``). Model replicas serve on their
unix socket either way (there is no TCP mode left to compare). Each on/off case alternates the
two platforms request by request (which goes first alternates too), so the machine's drift
falls on both. Cases (each prints one line starting with its letter and ending with
``ratio R``):

  (a) spawn: ``POST /hub/api/users/NAME/server`` until the hub says ready (one person, started
      and stopped --spawns times after a first start that makes the account), on a profile
      whose limit is the machine's two cores: the boundary's cost, not its limit's.
      ratio = off / on (goal >= 0.95).
  (b) job start: a ``python3 -c pass`` job from ``POST /jobs`` to its end, from the job's own
      timestamps (created -> finished: admission, the cgroup and namespace, the program, the
      cgroup's kill and removal); created -> started is printed too. ratio = off / on (>= 0.95).
  (c) endpoint request: one keep-alive connection, V2 infer of a 1x4 FP32 scikit-learn model
      through the platform's route, --requests a side. ratio = off / on of the medians (>= 0.95).
      Needs MLServer: ``.venv-mlserver`` (``make mlserver``) or $YITONG_MLSERVER (given to the
      platforms as ``models.mlserver``); without it the line says it was skipped.
  (d) two people, confinement on: ana abuses for --seconds (a job that allocates past its
      256Mi until the kernel kills it, again and again, and a fork bomb that forks up to the
      process limit with every process spinning), while ben runs the same short CPU job
      (cpu 1) one after another. ben's job durations (started -> finished) against a quiet run
      of the same jobs just before and after (half the seconds each). ratio = quiet median /
      loaded median (goal >= 1/1.2 = 0.83). The off platform is not put through this: without
      the limits a fork bomb takes the machine.

``--quick``: 3 spawns, 10 jobs, 200 requests a side, 40 s of load: under 10 minutes here.
Run as root (multi-user mode needs it); the accounts, cgroups and data directories it made are
removed at the end.
"""

from __future__ import annotations

import argparse
import os
import pwd
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "extensions"))
sys.path.insert(0, str(ROOT / "services"))
from shared_python import shared_bin  # noqa: E402
from stack import Stack  # noqa: E402

PYTHON = "/usr/bin/python3"  # every account can run it; the jobs need the standard library only
PEOPLE = ("admin", "sam", "ana", "ben")
MAX_PROCESSES = 128
PROFILE = {"display_name": "CPU small", "kernel": "python3", "cpu": 0.5, "memory": "1Gi"}
# (a)'s server: a limit as large as the machine, so that the case times what the boundary costs
# (the cgroup, the namespace) and not what it is for (a 0.5-cpu server is held to half a core:
# it starts in about twice the time of an unconfined one, which may use the whole machine)
WIDE = {"display_name": "CPU wide", "kernel": "python3", "cpu": 2, "memory": "2Gi"}
TRAIN = """
import sys, joblib, numpy as np
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(0)
x = rng.normal(size=(300, 4)).astype("float32")
joblib.dump(LogisticRegression(max_iter=500).fit(x, (x[:, 0] > 0).astype("int64")), sys.argv[1] + "/model.joblib")
"""
BODY = {"inputs": [{"name": "predict", "shape": [1, 4], "datatype": "FP32", "data": [0.5, 1.0, 2.0, -1.0]}]}
# ben's job: a fixed amount of pure-Python work (about half a second of one core here)
WORK = "import time\nt = time.perf_counter()\ns = 0\nfor i in range(6_000_000): s += i * i\nprint('took', time.perf_counter() - t)"
# ana's: memory until the kernel says no, and processes until the kernel says no, every one spinning
HOG = "chunks = []\nwhile True: chunks.append(b'x' * (16 << 20))"
BOMB = """
import os, time
end, n = time.time() + 15, 0
try:
    while True:
        if os.fork() == 0:
            while time.time() < end: pass
            os._exit(0)
        n += 1
except OSError as e:
    print(f"fork refused after {n} processes: {e}", flush=True)
while time.time() < end: pass
"""
TERMINAL = {"succeeded", "failed", "cancelled", "preempted"}


def settings(confined: bool) -> dict:
    local = {"inventory": {}, "mode": "multi-user", "max_processes": MAX_PROCESSES}
    if not confined:
        local |= {"cgroups": False, "pid_namespaces": False}
    return {
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        "backends": {"local": local},
        "jobs": {"poll_interval": 0.2},
        "profiles": {"cpu-small": PROFILE, "cpu-wide": WIDE},
        "vcs": {
            "bench": {"quota": {"cpu": 2, "memory": "4Gi"}, "groups": ["bench"], "profiles": ["cpu-small", "cpu-wide"]},
            "va": {"quota": {"cpu": 1, "memory": "2Gi"}, "groups": ["ga"], "profiles": ["cpu-small"]},
            "vb": {"quota": {"cpu": 1, "memory": "2Gi"}, "groups": ["gb"], "profiles": ["cpu-small"]},
        },
        "groups": {"bench": ["admin", "sam"], "ga": ["ana"], "gb": ["ben"]},
    }


def mlserver() -> str | None:
    """MLServer's ``mlserver`` executable, as models/mlserver.py finds it (None: not installed)."""
    found = os.environ.get("YITONG_MLSERVER") or str(ROOT / ".venv-mlserver" / "bin" / "mlserver")
    return found if os.path.exists(found) else None


class Platform:
    """One multi-user platform (a Stack) with its people's tokens."""

    def __init__(self, work: Path, confined: bool, mlserver_exe: str | None) -> None:
        self.confined = confined
        self.work = work / ("on" if confined else "off")
        self.work.mkdir()
        self.work.chmod(0o711)
        configured = settings(confined) | ({"models": {"mlserver": mlserver_exe}} if mlserver_exe else {})
        self.stack = Stack(self.work, configured, {p: secrets.token_hex(8) for p in PEOPLE})
        self.stack.bin_dir = shared_bin()
        self.tokens: dict[str, str] = {}

    @property
    def side(self) -> str:
        return "on" if self.confined else "off"

    def start(self) -> None:
        self.stack.start(timeout=180)
        self.tokens = {p: self.stack.token(p) for p in PEOPLE}

    def api(self, who: str) -> httpx.Client:
        return self.stack.platform_client(self.tokens[who])

    def stop(self) -> None:
        from yitong_services.core import cgroups

        self.stack.stop()
        for entry in pwd.getpwall():  # the accounts this platform made (homes in its data directory)
            if entry.pw_name.startswith("yt") and entry.pw_dir.startswith(str(self.stack.data_dir) + "/"):
                subprocess.run(["userdel", entry.pw_name], capture_output=True, check=False)
        layout = cgroups.detect()
        if layout.kind != "none":
            cgroups.remove_parent(layout, cgroups.parent_name(self.stack.data_dir.absolute()))

    # -- jobs ----------------------------------------------------------------------------------
    def submit(self, client: httpx.Client, vc: str, program: str, cpu: float, memory: str) -> int:
        body = {
            "name": "bench",
            "vc": vc,
            "environment": {"kernel": "python3"},
            "command": [PYTHON, "-c", program],
            "cpu": cpu,
            "memory": memory,
        }
        r = client.post("/jobs", json=body)
        if r.status_code != 201:
            raise RuntimeError(f"{self.side}: POST /jobs {r.status_code}: {r.text}")
        return int(r.json()["id"])

    def wait(self, client: httpx.Client, job_id: int, timeout: float = 300) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            job = client.get(f"/jobs/{job_id}").json()
            if job["state"] in TERMINAL:
                return job
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.side}: job {job_id} still {job['state']} after {timeout:g} s")
            time.sleep(0.05)


def seconds(job: dict, start: str, end: str) -> float:
    return (datetime.fromisoformat(job[end]) - datetime.fromisoformat(job[start])).total_seconds()


def alternate(platforms: list[Platform], rounds: int):
    """(round, platform) in alternating order: on, off, off, on, on, off, ..."""
    for i in range(rounds):
        for p in platforms if i % 2 == 0 else platforms[::-1]:
            yield i, p


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.0f} ms"


# -- (a) -----------------------------------------------------------------------------------------


def spawn_once(p: Platform) -> float:
    with p.stack.hub(p.tokens["admin"]) as hub:
        began = time.monotonic()
        r = hub.post("/users/sam/server", json={"vc": "bench", "profile": "cpu-wide"})
        if r.status_code not in (201, 202):
            raise RuntimeError(f"{p.side}: spawn {r.status_code}: {r.text}")
        p.stack.wait_ready(p.tokens["admin"], "sam", timeout=180)
        took = time.monotonic() - began
    p.stack.stop_server(p.tokens["admin"], "sam")
    return took


def case_a(platforms: list[Platform], spawns: int) -> None:
    for p in platforms:  # the first start makes the account and its home: not timed
        spawn_once(p)
    times: dict[str, list[float]] = {"on": [], "off": []}
    for _, p in alternate(platforms, spawns):
        times[p.side].append(spawn_once(p))
    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    print(
        f"(a) spawn, POST .../server until ready, {spawns} a side: median {on:.2f} s confined, {off:.2f} s not"
        f" (confined {', '.join(f'{t:.2f}' for t in times['on'])}); goal >= 0.95; ratio {off / on:.2f}",
        flush=True,
    )


# -- (b) -----------------------------------------------------------------------------------------


def case_b(platforms: list[Platform], jobs: int) -> None:
    clients = {p.side: p.api("ben") for p in platforms}
    whole: dict[str, list[float]] = {"on": [], "off": []}
    start: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for i, p in alternate(platforms, jobs + 2):
            c = clients[p.side]
            job = p.wait(c, p.submit(c, "vb", "pass", 0.5, "256Mi"))
            if job["state"] != "succeeded":
                raise RuntimeError(f"{p.side}: job {job['id']} {job['state']}: {job['reason']}")
            if i >= 2:  # two each to warm up
                whole[p.side].append(seconds(job, "created", "finished"))
                start[p.side].append(seconds(job, "created", "started"))
    finally:
        for c in clients.values():
            c.close()
    on, off = statistics.median(whole["on"]), statistics.median(whole["off"])
    print(
        f"(b) job start, a python3 -c pass job created -> finished, {jobs} a side: median {on * 1e3:.0f} ms"
        f" confined, {off * 1e3:.0f} ms not (created -> started {ms(start['on'])} and {ms(start['off'])});"
        f" goal >= 0.95; ratio {off / on:.2f}",
        flush=True,
    )


# -- (c) -----------------------------------------------------------------------------------------


def deploy(p: Platform, model_dir: Path) -> str:
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Endpoints, Models

    with Client(p.stack.platform_direct, p.tokens["admin"]) as c:
        signature = {"inputs": [{"name": "predict", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}
        Models(c).register("bench/small", model_dir, framework="sklearn", signature=signature, progress=None)
        Endpoints(c).create("small", "bench/small@1", "cpu-small")
    return f"{p.stack.platform_direct}/endpoints/small/v2/models/small/infer"


def wait_endpoints(platforms: list[Platform], timeout: float = 300) -> None:
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Endpoints

    deadline = time.monotonic() + timeout
    for p in platforms:
        with Client(p.stack.platform_direct, p.tokens["admin"]) as c:
            while (e := Endpoints(c).get("small"))["state"] != "ready":
                if e["state"] in ("failed", "stopped") or time.monotonic() > deadline:
                    raise RuntimeError(f"{p.side}: endpoint {e['state']}: {e.get('reason')}\n{p.stack.tail(20)}")
                time.sleep(0.3)


def case_c(platforms: list[Platform], requests: int, work: Path, mlserver_exe: str | None) -> None:
    if not mlserver_exe:
        print("(c) endpoint request: skipped, no MLServer here (make mlserver, or set YITONG_MLSERVER)", flush=True)
        return
    model_dir = work / "model"
    model_dir.mkdir()
    subprocess.run([str(Path(mlserver_exe).parent / "python"), "-c", TRAIN, str(model_dir)], check=True)
    urls = {p.side: deploy(p, model_dir) for p in platforms}
    wait_endpoints(platforms)
    clients = {
        p.side: httpx.Client(headers={"Authorization": f"token {p.tokens['admin']}"}, timeout=30) for p in platforms
    }
    times: dict[str, list[float]] = {"on": [], "off": []}
    block = 25
    try:
        for i, p in alternate(platforms, requests // block + 1):
            c, url = clients[p.side], urls[p.side]
            for _ in range(block):
                began = time.perf_counter()
                r = c.post(url, json=BODY)
                took = time.perf_counter() - began
                if r.status_code != 200:
                    raise RuntimeError(f"{p.side}: infer {r.status_code}: {r.text[:200]}")
                if i:  # the first block of each warms the connection and the model
                    times[p.side].append(took)
    finally:
        for c in clients.values():
            c.close()
    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    p99 = {k: sorted(v)[int(len(v) * 0.99) - 1] for k, v in times.items()}
    print(
        f"(c) endpoint request, V2 infer 1x4 FP32 sklearn over one keep-alive connection, {len(times['on'])} a side:"
        f" median {on * 1e3:.2f} ms confined, {off * 1e3:.2f} ms not (p99 {p99['on'] * 1e3:.1f} and"
        f" {p99['off'] * 1e3:.1f} ms); goal >= 0.95; ratio {off / on:.2f}",
        flush=True,
    )


# -- (d) -----------------------------------------------------------------------------------------


def bens_jobs(p: Platform, until: float) -> list[tuple[float, float]]:
    """ben's CPU jobs one after another until ``until``: each one's own time for its work (it
    prints it) and the platform's started -> finished."""
    durations = []
    with p.api("ben") as c:
        while time.monotonic() < until:
            job = p.wait(c, p.submit(c, "vb", WORK, 1, "256Mi"))
            if job["state"] != "succeeded":
                raise RuntimeError(f"ben's job {job['id']} {job['state']}: {job['reason']}")
            log = c.get(f"/jobs/{job['id']}/logs").text
            took = [float(line.split()[1]) for line in log.splitlines() if line.startswith("took ")]
            if not took:
                raise RuntimeError(f"ben's job {job['id']} printed no time: {log[-300:]!r}")
            durations.append((took[-1], seconds(job, "started", "finished")))
    return durations


def anas_abuse(p: Platform, program: str, stop: threading.Event, ends: list[str]) -> None:
    """One of ana's jobs after another until ``stop``; how each ended goes to ``ends``."""
    with p.api("ana") as c:
        while not stop.is_set():
            job = p.wait(c, p.submit(c, "va", program, 0.5, "256Mi"))
            ends.append(f"{job['state']}: {job.get('reason') or ''}")


def loaded_stretch(p: Platform, load_s: float, hog_ends: list[str], bomb_ends: list[str], abuse: str) -> list:
    stop = threading.Event()
    abusers = [
        threading.Thread(target=anas_abuse, args=(p, program, stop, ends), daemon=True)
        for program, ends, kind in ((HOG, hog_ends, "memory"), (BOMB, bomb_ends, "processes"))
        if kind in abuse
    ]
    for t in abusers:
        t.start()
    time.sleep(2)  # ana's first jobs under way
    try:
        return bens_jobs(p, time.monotonic() + load_s)
    finally:
        stop.set()
        for t in abusers:  # her last jobs end (a fork bomb spins 15 s): the next quiet stretch is quiet
            t.join(60)


def case_d(p: Platform, load_s: float, abuse: str = "memory,processes", verbose: bool = False) -> None:
    """Quiet, loaded, quiet, loaded, quiet (a quarter, a half, a half, a half, a quarter of
    ``load_s``): the machine's drift falls on both."""
    hog_ends: list[str] = []
    bomb_ends: list[str] = []
    quiet = bens_jobs(p, time.monotonic() + load_s / 4)
    loaded = loaded_stretch(p, load_s / 2, hog_ends, bomb_ends, abuse)
    quiet += bens_jobs(p, time.monotonic() + load_s / 2)
    loaded += loaded_stretch(p, load_s / 2, hog_ends, bomb_ends, abuse)
    quiet += bens_jobs(p, time.monotonic() + load_s / 4)
    q, lo = (statistics.median(t for t, _ in quiet), statistics.median(t for t, _ in loaded))
    qp, lp = (statistics.median(t for _, t in quiet), statistics.median(t for _, t in loaded))
    oom = sum(1 for e in hog_ends if "memory limit" in e)
    print(
        f"(d) ben's CPU jobs (cpu 1) while ana, beside him, fills her 256Mi ({len(hog_ends)} jobs, {oom} stopped at"
        f" their memory limit) and forks to her {MAX_PROCESSES}-process limit ({len(bomb_ends)} fork bombs) for"
        f" {load_s:g} s: his work took {lo:.2f} s (median of {len(loaded)}, worst {max(t for t, _ in loaded):.2f} s)"
        f" against {q:.2f} s quiet (of {len(quiet)}); started -> finished {lp:.2f} s against {qp:.2f} s"
        f" ({qp / lp:.2f}); goal >= {1 / 1.2:.2f}; ratio {q / lo:.2f}",
        flush=True,
    )
    if verbose:
        print(f"    ana's memory jobs ended: {sorted(set(hog_ends))[:3]}; fork bombs: {sorted(set(bomb_ends))[:3]}")


def main(argv: list[str] | None = None) -> None:
    from yitong_services.datasets import materialize

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="3 spawns, 10 jobs, 200 requests a side, 40 s of load")
    p.add_argument("--cases", default="abcd")
    p.add_argument("--spawns", type=int, default=8)
    p.add_argument("--jobs", type=int, default=30)
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=120, help="(d): seconds of ana's abuse")
    p.add_argument("--verbose", action="store_true", help="(d): how ana's jobs ended")
    p.add_argument("--abuse", default="memory,processes", help="(d): what ana exhausts (to tell their costs apart)")
    args = p.parse_args(argv)
    if args.quick:
        args.spawns, args.jobs, args.requests, args.seconds = 3, 10, 200, 40
    if os.geteuid() != 0:
        sys.exit("run as root: multi-user mode (each person's account, cgroups, namespaces) needs it")
    mlserver_exe = mlserver() if "c" in args.cases else None
    work = Path(tempfile.mkdtemp(prefix="yitong-isolation-bench-", dir="/var/tmp"))
    work.chmod(0o711)
    began = time.monotonic()
    platforms = [Platform(work, True, mlserver_exe)]
    if set(args.cases) & set("abc"):
        platforms.append(Platform(work, False, mlserver_exe))
    try:
        for platform in platforms:
            platform.start()
        if "a" in args.cases:
            case_a(platforms, args.spawns)
        if "b" in args.cases:
            case_b(platforms, args.jobs)
        if "c" in args.cases:
            case_c(platforms, args.requests, work, mlserver_exe)
        if "d" in args.cases:
            for platform in platforms[1:]:  # the machine to the confined one alone
                platform.stop()
            del platforms[1:]
            case_d(platforms[0], args.seconds, args.abuse, args.verbose)
    finally:
        for platform in platforms:
            try:
                platform.stop()
            except Exception as e:  # the other platform still goes
                print(f"stopping the {platform.side} platform: {e}", file=sys.stderr)
        materialize.remove_tree(work)
    print(f"({time.monotonic() - began:.0f} s in all)", flush=True)


if __name__ == "__main__":
    main()
