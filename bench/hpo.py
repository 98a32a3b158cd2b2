"""Hyperparameter search, side by side in one run (issue 11): docs/hpo.md and docs/benchmarks.md.

    .venv/bin/python bench/hpo.py [--quick] [--trials 200] [--nni-trials 20] [--hartmann-trials 60] [--skip a,b,c]
                                  [--settle 360]

(a) N no-op trials (each ``python -c`` that reads its parameters and reports 0), concurrency 2,
    through the platform (a real hub + service, local backend, its default settings) vs an
    Optuna loop that starts each trial as a subprocess: wall time, per-trial overhead, ratio
    (peer wall over ours; target >= 1/1.5, overhead <= 100 ms a trial), and each side's CPU per
    trial over the whole machine (/proc/stat: both keep the cores busy), ours split into its
    long-lived processes (the service, its fork server, the hub and proxy: the hub's descendants'
    own CPU) and the rest (the jobs' wrappers and programs), run in the order peer,
    ours, ours, peer (twice; --quick: once) and averaged (the host's load drifts). Both clocks start warm:
    the peer imports Optuna and makes its study before its clock starts; the service's first
    experiment (2 trials: it imports the engine and starts the fork server) runs before, and its
    wall time is printed apart. Both clocks stop at the last result: the peer's when ``optimize``
    returns, the platform's at the end the experiment records (its ``finished``, on this machine's
    clock), not up to a poll later; the bench polls every 0.5 s and prints when it saw the end.
    Before each round, (a) waits (at most --settle seconds) until a new file costs what it does
    on a filesystem at rest: see :func:`settle`.
(b) NNI 3.0's local mode (bench/.venv-nni, made on first use) on the same no-op trials, a bounded
    run of --nni-trials, extrapolated per trial: ratio NNI per-trial wall over ours (target >= 10).
(c) TPE on Hartmann-6 (maximise -f, optimum 3.32237), 5 seeds: the platform's engine (the replay
    that decides every trial, hpo/engine.py) vs plain Optuna, mean best value; ratio plain over
    ours (1 = the same search quality).
Each case prints one line starting with its letter and ending with ``ratio R``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from stack import Stack  # noqa: E402

NNI_VENV = ROOT / "bench" / ".venv-nni"
PY = sys.executable
NOOP = "from yitong_lab import hpo; hpo.get_params(); hpo.report_final(0.0)"
SPACE = {"x": {"_type": "uniform", "_value": [0, 1]}}


def nni_python() -> Path | None:
    python = NNI_VENV / "bin" / "python"
    if not python.exists():
        print("creating bench/.venv-nni with nni==3.0 ...", flush=True)
        subprocess.run([PY, "-m", "venv", str(NNI_VENV)], check=True)
        r = subprocess.run([str(NNI_VENV / "bin" / "pip"), "install", "-q", "setuptools<81", "nni==3.0"])
        if r.returncode:
            return None
    return python


# -- (a) ------------------------------------------------------------------------------------------


def busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (every process counted), or None
    without /proc/stat: both sides of (a) keep the cores busy, so their CPU per trial explains
    their wall times."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user, nice, system, irq, softirq: not idle, iowait, or steal (a busy host's other guests)
    return (sum(fields[:7]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def new_file_cost(where: Path, n: int = 200) -> float:
    """CPU seconds this process spends creating one empty file or directory in ``where`` (the
    inode's allocation), in the shape a job's files take: a new directory with a few files in it,
    ``n`` inodes in all. A trial's job makes seven files and directories in the platform's data
    directory (its job directory, parameter file, attempt and log directories, log, outputs, and
    the pid record, to which the exit record is a line added; its final result goes through a
    pipe), the peer's subprocess none. 0.02-0.7 ms on the ext4 of the machine these figures come
    from, depending on what was deleted nearby in the last minutes (see :func:`settle`), 0.02 ms
    on tmpfs."""
    d = Path(tempfile.mkdtemp(dir=where))  # removed with ``where``, at the bench's end
    start = time.process_time()
    for i in range(0, n, 5):
        os.mkdir(d / str(i))
        for j in range(4):
            os.close(os.open(d / str(i) / str(j), os.O_CREAT | os.O_WRONLY, 0o600))
    return (time.process_time() - start) / n


SCRATCH: list[Path] = []  # the data directories this run made: removed when it ends, not before


def scratch() -> Path:
    """A new data directory for a platform run, kept until the bench ends: on a filesystem without
    a journal a run's thousands of files deleted just before the next timed run would make each
    new file of the next one cost more (see :func:`settle`; perf put a tenth of the machine's CPU
    there during (a)), a cost of the bench's own clean-up, on the platform's side only (the peer
    makes no files)."""
    d = Path(tempfile.mkdtemp(prefix="yitong-bench-"))
    SCRATCH.append(d)
    return d


SETTLED = 0.03e-3  # CPU seconds per new file at or below which the filesystem is at rest (0.02 ms here)


def settle(where: Path, limit: float) -> tuple[float, float, float]:
    """Wait, at most ``limit`` seconds, until a new file in ``where`` (the scratch directory a
    round of (a) makes its platform's data directory in) costs no more than :data:`SETTLED`:
    ``(cost at first, cost at the end, seconds waited)``.

    On ext4 without a journal (this machine's), a new inode skips, one by one, the free inodes of
    its group deleted in the last 60 s, or 360 s while their table block is not yet written back
    (the kernel's ``recently_deleted``): right after a test run or another bench run removed
    thousands of files, each of the seven a trial's job makes costs 0.15-0.4 ms of CPU instead of
    0.02, and (a) moves by about 0.05 with it, a cost of the earlier clean-up that only the side
    that makes files pays (a journaled filesystem never pays it). The probes' files are kept
    until the bench ends, so the wait adds no deletions of its own."""
    first = cost = new_file_cost(where)
    start = time.monotonic()
    while cost > SETTLED and time.monotonic() - start < limit:
        print(
            f"  waiting for the filesystem: a new file costs {cost * 1e3:.2f} ms of CPU "
            f"(at rest: {SETTLED * 1e3:.2f}); {time.monotonic() - start:.0f} of at most {limit:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(15)
        cost = new_file_cost(where)
    return first, cost, time.monotonic() - start


CPU: dict[str, float] = {}  # "platform" / "peer" -> machine CPU seconds over the last run
FIRST: dict[str, float] = {}  # "platform" -> wall seconds of a fresh service's first (2-trial) experiment
POLL = 0.5  # seconds between the bench's polls (each costs the proxy and the service ~5-10 ms of CPU)


def _cpu_since(start: float | None) -> float | None:
    end = busy_seconds()
    return end - start if start is not None and end is not None else None


PARTS = ("service", "fork server", "hub and proxy")
SPLIT: dict[str, float] = {}  # part -> CPU seconds over the last platform run (its long-lived processes)


def _part(cmdline: bytes) -> str:
    if b"launcher import serve" in cmdline:
        return "fork server"
    if b"yitong-service" in cmdline:
        return "service"
    return "hub and proxy"  # the hub itself, configurable-http-proxy, the hub's other services


def stack_cpu(root: int) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of ``root`` (the hub) and its live descendants, by pid: the stack's
    long-lived processes. The jobs' wrappers and programs come and go between two looks: they
    are the rest of the machine's CPU."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    spent: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parent[int(name)] = int(fields[1])
        spent[int(name)] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    out = {}
    for pid in spent:
        p = pid
        while p not in (root, 0, 1) and p in parent:
            p = parent[p]
        if p == root:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out[pid] = (_part(f.read()), spent[pid])
            except OSError:
                continue
    return out


def _split(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    parts = dict.fromkeys(PARTS, 0.0)
    for pid, (part, cpu) in after.items():
        parts[part] += cpu - before.get(pid, (part, 0.0))[1]
    return parts


def platform_run(
    trials: int, concurrency: int, poll: float | None = None, reps: int = 1, where: Path | None = None
) -> list[tuple[float, float]]:
    """``reps`` experiments of ``trials`` in one warm service, one after another: for each, the
    seconds to its recorded end and the seconds until the bench's poll saw it. Its data directory
    is made in ``where`` (a :func:`scratch` directory; a new one by default)."""
    settings = {
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        "jobs": {"poll_interval": poll} if poll else {},
        "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.1, "memory": "512Mi"}},
        "vcs": {"bench": {"quota": {"cpu": 100, "memory": "100Gi"}, "groups": ["bench"], "profiles": ["cpu"]}},
        "groups": {"bench": ["admin"]},
    }
    data = (where or scratch()) / "yitong"  # kept until the bench ends
    data.mkdir()
    stack = Stack(data, settings, {"admin": secrets.token_hex(8)}).start()
    try:
        api = stack.platform_client(stack.token("admin"))

        def experiment(n: int) -> tuple[float, float]:
            body = {
                "name": "bench",
                "vc": "bench",
                "space": SPACE,
                "tuner": {"name": "Random"},
                "concurrency": concurrency,
                "max_trials": n,
                "template": {
                    "environment": {"kernel": "python3"},
                    "command": [PY, "-c", NOOP],
                    "cpu": 0.1,
                    "memory": "64Mi",
                },
            }
            start, seen = time.time(), time.perf_counter()
            r = api.post("/experiments", json=body)
            r.raise_for_status()
            exp_id = r.json()["id"]
            while True:
                exp = api.get(f"/experiments/{exp_id}", params={"trials": "false"}).json()
                if exp["state"] in ("done", "stopped"):
                    break
                time.sleep(POLL)
            assert exp["counts"] == {"complete": n}, exp["counts"]
            # the experiment's own end (the service's clock is this machine's): the peer's clock
            # stops when its last result is told, not up to a poll later
            return datetime.fromisoformat(exp["finished"]).timestamp() - start, time.perf_counter() - seen

        # the peer's process has imported Optuna and made its study before its clock starts; the
        # service's first experiment imports the engine and starts the fork server: timed apart
        FIRST["platform"] = experiment(concurrency)[0]
        FIRST["new_file"] = new_file_cost(data.parent)
        assert stack.proc is not None
        parts0, cpu0 = stack_cpu(stack.proc.pid), busy_seconds()
        runs = [experiment(trials) for _ in range(reps)]
        CPU["platform"] = (_cpu_since(cpu0) or 0.0) / reps
        SPLIT.update({k: v / reps for k, v in _split(parts0, stack_cpu(stack.proc.pid)).items()})
        api.close()
    finally:
        stack.stop()
    return runs


def optuna_run(trials: int, concurrency: int) -> float:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0), direction="maximize")

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0, 1)
        env = {"YT_HPO_PARAMS": json.dumps({"x": x})}
        subprocess.run([PY, "-c", NOOP], check=True, env={**os.environ, **env}, capture_output=True)
        return 0.0

    start, cpu0 = time.perf_counter(), busy_seconds()
    study.optimize(objective, n_trials=trials, n_jobs=concurrency)
    wall = time.perf_counter() - start
    CPU["peer"] = _cpu_since(cpu0) or 0.0
    return wall


def bare_trial_seconds(n: int = 10) -> float:
    start = time.perf_counter()
    for _ in range(n):
        subprocess.run([PY, "-c", NOOP], check=True, capture_output=True)
    return (time.perf_counter() - start) / n


def case_a(trials: int, poll: float | None = None, rounds: int = 1, wait: float = 0.0) -> float:
    # peer, ours, ours, peer (each round): a drift of the host's load weighs on both sides alike
    peers: list[float] = []
    walls: list[float] = []
    timed: list[float] = []  # when the bench's poll saw each end
    peer_cpu: list[float] = []
    ours_cpu: list[float] = []
    splits: list[dict[str, float]] = []
    waits: list[tuple[float, float, float]] = []  # each round's settle(): cost at first, at the end, seconds
    for _ in range(rounds):
        where = scratch()  # the filesystem at rest before the round's four runs
        waits.append(settle(where, wait))
        peers.append(optuna_run(trials, 2))
        peer_cpu.append(CPU.get("peer", 0.0))
        for wall, seen in platform_run(trials, 2, poll, reps=2, where=where):
            walls.append(wall)
            timed.append(seen)
        ours_cpu.append(CPU.get("platform", 0.0))
        splits.append(dict(SPLIT))
        peers.append(optuna_run(trials, 2))
        peer_cpu.append(CPU.get("peer", 0.0))
    ours, peer = statistics.mean(walls), statistics.mean(peers)
    overhead = (ours - peer) * 2 / trials

    def listed(values: list[float]) -> str:
        return " / ".join(f"{v:.1f}" for v in values)

    settled = "; ".join(f"{a * 1e3:.2f} -> {b * 1e3:.2f} ms in {w:.0f} s" for a, b, w in waits)
    split = ", ".join(f"{part} {statistics.mean(d[part] for d in splits) / trials * 1e3:.1f}" for part in PARTS)

    print(
        f"(a) {trials} no-op trials, concurrency 2, poll {poll or 'default'} s, {rounds} round(s) in the order "
        f"peer, ours, ours, peer: platform {listed(walls)} s to the experiment's recorded end (seen by the "
        f"bench's {POLL} s poll at {listed(timed)} s; its service's first experiment, 2 trials, "
        f"{FIRST.get('platform', 0):.2f} s before, apart), Optuna + subprocess {listed(peers)} s, "
        f"overhead {overhead * 1e3:.0f} ms/trial [target <= 100 ms: {'met' if overhead <= 0.1 else 'NOT met'}], "
        f"machine CPU per trial {statistics.mean(ours_cpu) / trials * 1e3:.0f} vs "
        f"{statistics.mean(peer_cpu) / trials * 1e3:.0f} ms (ours: {split}, the jobs' wrappers and programs "
        f"the rest; a new file in the data directory's filesystem "
        f"costs {FIRST.get('new_file', 0) * 1e3:.2f} ms of CPU, a trial's job makes 7; before each round, "
        f"the bench waited for it: {settled}), ratio {peer / ours:.2f}",
        flush=True,
    )
    return ours / trials


# -- (b) ------------------------------------------------------------------------------------------

NNI_DRIVER = """
import json, sys, time
from nni.experiment import Experiment
n, code, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
exp = Experiment("local")
exp.config.trial_command = sys.executable + " trial.py"
exp.config.trial_code_directory = code
exp.config.search_space = {"x": {"_type": "uniform", "_value": [0, 1]}}
exp.config.tuner.name = "Random"
exp.config.max_trial_number = n
exp.config.trial_concurrency = 2
exp.start(port)
try:
    deadline = time.time() + 600
    while time.time() < deadline:
        jobs = exp.list_trial_jobs()
        if len(jobs) >= n and all(j.status in ("SUCCEEDED", "FAILED", "USER_CANCELED") for j in jobs):
            break
        time.sleep(0.5)
    jobs = exp.list_trial_jobs()
    starts = [j.startTime for j in jobs if j.startTime]
    ends = [j.endTime for j in jobs if j.endTime]
    print(json.dumps({"n": len(ends), "span": (max(ends) - min(starts)) / 1000.0}))
finally:
    exp.stop()
"""


def case_b(trials: int, ours_per_trial: float | None) -> None:
    python = nni_python()
    if python is None:
        print("(b) NNI 3.0 local mode: nni does not install here; ratio n/a")
        return
    from helpers import free_port

    with tempfile.TemporaryDirectory() as tmp:
        code = Path(tmp)
        (code / "trial.py").write_text("import nni\nnni.get_next_parameter()\nnni.report_final_result(0.0)\n")
        (code / "driver.py").write_text(NNI_DRIVER)
        r = subprocess.run(
            [str(python), str(code / "driver.py"), str(trials), str(code), str(free_port())],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=code,
        )
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode or not lines:
        print(f"(b) NNI 3.0 local mode did not run ({r.stderr.strip()[-300:]}); ratio n/a")
        return
    got = json.loads(lines[-1])
    per = got["span"] / max(got["n"], 1)
    ours = ours_per_trial if ours_per_trial is not None else bare_trial_seconds()
    print(
        f"(b) NNI 3.0 local mode, {got['n']} no-op trials, concurrency 2: {per:.2f} s/trial wall vs ours "
        f"{ours:.3f} s/trial [target >= 10x: {'met' if per / ours >= 10 else 'NOT met'}], ratio {per / ours:.1f}",
        flush=True,
    )


# -- (c) ------------------------------------------------------------------------------------------

A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
P = [
    [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
    [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
    [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
    [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
]
ALPHA = [1.0, 1.2, 3.0, 3.2]


def hartmann6(x: list[float]) -> float:
    """-f (to maximise): 3.32237 at the optimum."""
    return sum(ALPHA[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(6))) for i in range(4))


def case_c(trials: int, seeds: int = 5) -> None:
    import optuna

    from yitong_services.hpo import engine, states
    from yitong_services.hpo.schemas import ExperimentSpec

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = {f"x{j}": {"_type": "uniform", "_value": [0, 1]} for j in range(6)}
    ours, plain = [], []
    for seed in range(seeds):
        config = ExperimentSpec.model_validate(
            {"name": "h6", "vc": "v", "space": space, "tuner": {"name": "TPE"}, "seed": seed, "template": {}}
        ).model_dump(mode="json")
        rows: list[dict] = []
        for n in range(trials):
            params, internal = engine.ask(config, rows)
            value = hartmann6([params[f"x{j}"] for j in range(6)])
            rows.append(
                {"number": n, "state": states.COMPLETE, "value": value, "intermediate": [], "internal": internal}
            )
        ours.append(max(r["value"] for r in rows))
        study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
        study.optimize(lambda t: hartmann6([t.suggest_float(f"x{j}", 0, 1) for j in range(6)]), n_trials=trials)
        plain.append(study.best_value)
    mo, mp = statistics.mean(ours), statistics.mean(plain)
    so, sp = statistics.stdev(ours), statistics.stdev(plain)
    print(
        f"(c) TPE on Hartmann-6, {trials} trials x {seeds} seeds, best (optimum 3.322): ours {mo:.3f} ± {so:.3f}, "
        f"plain Optuna {mp:.3f} ± {sp:.3f}, ratio {mp / mo:.3f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="60 / 10 / 30 trials: under 10 minutes")
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--nni-trials", type=int, default=20)
    p.add_argument("--hartmann-trials", type=int, default=60)
    p.add_argument("--poll", type=float, default=None, help="the service's jobs.poll_interval (s; default: its own)")
    p.add_argument("--skip", default="", help="comma-separated cases to skip: a, b, c")
    p.add_argument(
        "--settle",
        type=float,
        default=360.0,
        help="(a) waits at most this long (s) for the filesystem to be at rest after recent deletions (0: not)",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.trials, args.nni_trials, args.hartmann_trials = 60, 10, 30
    skip = set(filter(None, args.skip.split(",")))
    try:
        per = case_a(args.trials, args.poll, 1 if args.quick else 2, args.settle) if "a" not in skip else None
        if "b" not in skip:
            case_b(args.nni_trials, per)
        if "c" not in skip:
            case_c(args.hartmann_trials)
    finally:
        for d in SCRATCH:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
