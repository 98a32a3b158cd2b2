"""Dataset commits: Yitong (`yt data commit` against the real platform service) versus
`dvc add`, side by side in one run on the same files.

    .venv/bin/python bench/datasets.py [--small-files 70000] [--big-gib 4] [--work DIR]
    .venv/bin/python bench/datasets.py --quick [--busy] [--repeat 3]

DVC runs from its own environment (bench/.venv-dvc, created on first use with
`pip install dvc==3.67.1`), never the project's. Cases:

  (a) 70,000 files of 4 KiB, first commit        target: >= 5x DVC
  (b) one 4 GiB file                              target: >= 2x DVC
  (c) no-op re-commit of (a)                      target: < 1 s
  (d) re-commit after changing 1% of (a)'s files  target: proportional to the change
      (then 10%, to show how the time follows the change)

  (x) 20,000 files of 4 KiB, first commit        target: >= 10x DVC, quiet and --busy

Prints wall time, files/s or GB/s and the ratio (DVC time / Yitong time) for each case.
``--quick`` runs only (x) (``--repeat`` times, each on fresh files; well under 10 minutes);
``--busy`` keeps a busy-loop process running on the last core during every case (on a 2-core
machine: the second core busy). Each (x) prints one line ``(x) ... ratio R``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from stack import Stack  # noqa: E402

DVC_VENV = ROOT / "bench" / ".venv-dvc"
YT = Path(sys.executable).parent / "yt"


def dvc_bin() -> Path:
    dvc = DVC_VENV / "bin" / "dvc"
    if not dvc.exists():
        print("creating bench/.venv-dvc with dvc==3.67.1 ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(DVC_VENV)], check=True)
        subprocess.run([str(DVC_VENV / "bin" / "pip"), "install", "-q", "dvc==3.67.1"], check=True)
    return dvc


def make_small(root: Path, n: int, size: int = 4096) -> None:
    for i in range(n):
        d = root / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:06d}.bin").write_bytes(os.urandom(size))


def make_big(path: Path, gib: float) -> None:
    block = 64 << 20
    left = int(gib * (1 << 30))
    with open(path, "wb") as f:
        while left > 0:
            f.write(os.urandom(min(block, left)))
            left -= block


def touch_percent(root: Path, percent: float) -> int:
    files = sorted(root.rglob("*.bin"))
    step = max(1, round(100 / percent))
    changed = files[::step]
    for p in changed:
        p.write_bytes(os.urandom(p.stat().st_size))
    return len(changed)


X_FILES = 20_000


def busy_loop() -> subprocess.Popen:
    """A process that keeps one core busy (pinned to the last core where the OS allows)."""
    code = (
        "import os\n"
        "try:\n    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})\n"
        "except (AttributeError, OSError):\n    pass\n"
        "while True:\n    pass\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    return elapsed


def case_x(repo: Path, yt, dv, round_: int, busy: bool) -> tuple[float, float]:
    """(x): a fresh tree of 20,000 x 4 KiB (new bytes: nothing to deduplicate), a fresh dataset,
    an empty stat cache; ``yt data commit`` then ``dvc add`` of the same tree."""
    name = f"x{round_}"
    make_small(repo / name, X_FILES)
    os.sync()
    ours = yt("data", "commit", name, f"bench/{name}", "-m", "x", cache=f"x-cache-{round_}")
    theirs = dv("add", "-q", name)
    state = ", second core busy" if busy else ""
    print(
        f"(x) commit {X_FILES:,} files of 4 KiB{state}: yitong {ours:.2f} s ({X_FILES / ours:,.0f} files/s), "
        f"dvc {theirs:.2f} s ({X_FILES / theirs:,.0f} files/s), ratio {theirs / ours:.1f}",
        flush=True,
    )
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small-files", type=int, default=70_000)
    parser.add_argument("--big-gib", type=float, default=4.0)
    parser.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--quick", action="store_true", help="only case (x)")
    parser.add_argument("--busy", action="store_true", help="keep the last core busy during the cases")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of case (x), each on fresh files")
    args = parser.parse_args()
    dvc = dvc_bin()
    work = Path(args.work or tempfile.mkdtemp(prefix="yt-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    repo = work / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir()
    if not args.quick:
        print(f"generating {args.small_files} x 4 KiB and {args.big_gib} GiB in {repo} ...", flush=True)
        make_small(repo / "small", args.small_files)
        make_big(repo / "big.bin", args.big_gib)
        os.sync()  # neither tool should pay for the generator's writeback

    settings = {
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        "vcs": {"bench": {"quota": {"cpu": 1}, "groups": ["bench"], "profiles": []}},
        "groups": {"bench": ["admin"]},
    }
    stack = Stack(work / "stack", settings, {"admin": secrets.token_hex(8)})
    (work / "stack").mkdir(exist_ok=True)
    stack.start()
    rows = []
    busy = None
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("YITONG_", "JUPYTERHUB_"))}
        # the URL a notebook server on the local backend gets (loopback, not through the proxy)
        env.update(YT_API_URL=stack.platform_direct, YT_TOKEN=stack.token("admin"))
        denv = dict(os.environ, DVC_NO_ANALYTICS="1")
        subprocess.run([str(dvc), "init", "--no-scm", "-q"], cwd=repo, check=True, env=denv)

        def yt(*a, cache="yt-cache"):
            return timed([str(YT), *a], repo, dict(env, YITONG_CACHE_DIR=str(work / cache)))

        def dv(*a):
            return timed([str(dvc), *a], repo, denv)

        if args.busy:
            busy = busy_loop()
            time.sleep(0.5)
        for round_ in range(args.repeat):
            case_x(repo, yt, dv, round_, args.busy)
        if not args.quick:
            rows += small_and_big(repo, args, yt, dv)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        stack.stop()
    if rows:
        report(rows)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


def small_and_big(repo: Path, args, yt, dv) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Cases (a) to (d)."""
    rows = []
    n = args.small_files
    big_bytes = (repo / "big.bin").stat().st_size
    ours, theirs = yt("data", "commit", "small", "bench/small", "-m", "a"), dv("add", "-q", "small")
    rows.append((f"(a) {n} x 4 KiB", ours, theirs, f"{n / ours:,.0f} files/s", f"{n / theirs:,.0f} files/s"))
    ours, theirs = yt("data", "commit", "big.bin", "bench/big", "-m", "b"), dv("add", "-q", "big.bin")
    gb = big_bytes / 1e9
    rows.append(
        (f"(b) one {args.big_gib:g} GiB file", ours, theirs, f"{gb / ours:.2f} GB/s", f"{gb / theirs:.2f} GB/s")
    )
    ours, theirs = yt("data", "commit", "small", "bench/small", "-m", "c"), dv("add", "-q", "small")
    rows.append(("(c) no-op re-commit of (a)", ours, theirs, "", ""))
    for percent in (1.0, 10.0):  # the second size shows how the time follows the change
        changed = touch_percent(repo / "small", percent)
        ours, theirs = yt("data", "commit", "small", "bench/small", "-m", "d"), dv("add", "-q", "small")
        rows.append(
            (
                f"(d) {changed} files ({percent:g}%) changed",
                ours,
                theirs,
                f"{changed / ours:,.0f} changed/s",
                f"{changed / theirs:,.0f} changed/s",
            )
        )
    return rows


def report(rows: list[tuple]) -> None:
    print(f"\n{'case':32} {'yitong':>9} {'dvc':>9} {'dvc/yt':>7}   yitong rate / dvc rate")
    for name, ours, theirs, rate_o, rate_t in rows:
        print(f"{name:32} {ours:8.2f}s {theirs:8.2f}s {theirs / ours:6.1f}x   {rate_o} / {rate_t}")
    (_, one, *_), (_, ten, *_) = rows[-2], rows[-1]
    noop = rows[2][1]
    print(
        f"\n(d) beyond the no-op re-commit ({noop:.2f} s: the scan): {one - noop:.2f} s for 1%, "
        f"{ten - noop:.2f} s for 10% ({(ten - noop) / max(one - noop, 1e-9):.1f}x for 10x the files)"
    )
    print("targets: (a) >= 5x, (b) >= 2x, (c) < 1 s, (d) proportional to the change, (x) >= 10x")


if __name__ == "__main__":
    main()
