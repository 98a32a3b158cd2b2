"""Under faults, on the whole embedded platform (hub, proxy, platform service) as `make run` starts it.

    .venv/bin/python bench/faults.py [--quick] [--cases ab] [--clients 20] [--outage 20] [--repeat 3]

Cases (each prints one line starting with its letter and ending with `ratio R`):

  (a) a PostgreSQL outage under polling clients: the platform on the CI's PostgreSQL
      ($YITONG_TEST_POSTGRES_URL, a database of its own), --clients threads each polling
      `GET /jobs` through the proxy every 0.25 s; after 5 s the PostgreSQL server is stopped for
      --outage seconds (pg_ctlcluster, or pg_ctl on .ci/services.sh's cluster), then started again,
      and the clients go on 10 s more. A proper answer is a 200, or a 503 that is JSON with
      `Retry-After`; anything else (a 500, the proxy's HTML page, a reset, a timeout) is not.
      Goal: every answer proper; ratio = the share of proper answers / 1.0.
  (b) a kill -9 of the platform service: seconds until `GET /health` answers 200 through the
      proxy again, with the supervisor (`service.restart: true`, the default) against the hub's
      own restart of a managed service (`service.restart: false`: JupyterHub polls its services
      every 30 s). ratio = the hub's time / ours (goal >= 5); the median of --repeat kills each.

``--quick``: a 10 s outage with 10 clients, one kill each way: about two minutes. Needs root for
(a) (it stops the machine's PostgreSQL: run it where nothing else uses that server).
"""

from __future__ import annotations

import argparse
import glob
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from stack import Stack  # noqa: E402

PASSWORDS = {"admin": "admin-pw-1234", "alice": "alice-pw-1234"}


def settings(**extra) -> dict:
    return {
        "backend": "local",
        "hub": {"admin_users": ["admin"]},
        "backends": {"local": {"mode": "single-person"}},
        "profiles": {"cpu": {"cpu": 1, "memory": "1Gi"}},
        "vcs": {"bench": {"quota": {"cpu": 2, "memory": "4Gi"}, "groups": ["bench"], "profiles": ["cpu"]}},
        "groups": {"bench": ["admin", "alice"]},
        **extra,
    }


# -- (a) -------------------------------------------------------------------------------------------


def postgres(action: str) -> None:
    """Stop or start the machine's PostgreSQL server (the cluster .ci/services.sh started)."""
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    assert versions, "no PostgreSQL server here"
    listed = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True)
    ver = Path(versions[-1]).parts[-3]
    if listed.returncode == 0 and f"{ver} main" in listed.stdout:
        subprocess.run(
            ["pg_ctlcluster", ver, "main", action, *(["-m", "fast"] if action == "stop" else [])], check=True
        )
        return
    data = "/var/lib/postgresql/yitong-ci"
    cmd = [versions[-1], "-D", data, "-w", action]
    if action == "start":
        cmd += ["-o", f"-p {os.environ.get('YITONG_PG_PORT', '5432')} -k /tmp", "-l", f"{data}/log"]
    else:
        cmd += ["-m", "fast"]
    subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True)


def proper(response: httpx.Response | None) -> bool:
    if response is None:
        return False
    if response.status_code == 200:
        return True
    return (
        response.status_code == 503
        and response.headers.get("content-type", "").startswith("application/json")
        and "retry-after" in response.headers
    )


def case_a(clients: int, outage: float) -> None:
    from tests.services.conftest import wipe

    url = os.environ.get("YITONG_TEST_POSTGRES_URL")
    assert url, "(a) needs YITONG_TEST_POSTGRES_URL (source <(.ci/services.sh --env))"
    wipe(url)
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(Path(tmp), settings(database={"url": url}), PASSWORDS)
        stack.start()
        try:
            token = stack.token("alice")
            stop = threading.Event()
            answers: list[tuple[float, int | str]] = []
            lock = threading.Lock()

            def poll() -> None:
                with httpx.Client(headers={"Authorization": f"token {token}"}, timeout=15) as client:
                    while not stop.is_set():
                        began = time.monotonic()
                        try:
                            r = client.get(stack.platform + "/jobs")
                            seen: int | str = r.status_code if proper(r) else f"{r.status_code} {r.text[:60]!r}"
                        except httpx.HTTPError as e:
                            seen = type(e).__name__
                        with lock:
                            answers.append((began, seen))
                        time.sleep(max(0.0, 0.25 - (time.monotonic() - began)))

            threads = [threading.Thread(target=poll, daemon=True) for _ in range(clients)]
            for t in threads:
                t.start()
            time.sleep(5)
            postgres("stop")
            down = time.monotonic()
            try:
                time.sleep(outage)
            finally:
                postgres("start")
            up = time.monotonic()
            time.sleep(10)
            stop.set()
            for t in threads:
                t.join(30)
        finally:
            stack.stop()
    total = len(answers)
    good = sum(1 for _, seen in answers if isinstance(seen, int))
    during = [seen for began, seen in answers if down <= began <= up + 5]
    bad = sorted({str(seen) for _, seen in answers if not isinstance(seen, int)})
    print(
        f"(a) PostgreSQL stopped {outage:g} s under {clients} polling clients: {good}/{total} answers proper"
        f" ({sum(1 for s in during if s == 503)} JSON 503 with Retry-After while it was down;"
        f" not proper: {', '.join(bad[:5]) or 'none'}); ratio {good / total:.3f}",
        flush=True,
    )


# -- (b) -------------------------------------------------------------------------------------------


def service_pid(data_dir: Path) -> int:
    """The platform service's own process (not its supervisor) of the stack on ``data_dir``."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        text = [a.decode(errors="replace") for a in argv]
        if str(data_dir) in text and (
            "yitong_services.core.app" in text or any(a.endswith("/yitong-service") for a in text[:2])
        ):
            return int(entry)
    raise LookupError("the platform service's process is not running")


def back_after_kill(stack: Stack, deadline: float = 90) -> float:
    pid = service_pid(stack.data_dir)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    with httpx.Client(timeout=2) as client:
        while time.monotonic() - killed < deadline:
            try:
                if client.get(stack.platform + "/health").status_code == 200 and service_pid(stack.data_dir) != pid:
                    return time.monotonic() - killed
            except (httpx.HTTPError, LookupError):
                pass
            time.sleep(0.05)
    raise RuntimeError(f"the service did not answer within {deadline:g} s of its kill")


def case_b(repeat: int) -> None:
    figures: dict[bool, list[float]] = {}
    for restart in (True, False):
        with tempfile.TemporaryDirectory() as tmp:
            stack = Stack(Path(tmp), settings(service={"restart": restart}), PASSWORDS)
            stack.start()
            try:
                figures[restart] = [back_after_kill(stack) for _ in range(repeat)]
            finally:
                stack.stop()
    ours, hub = statistics.median(figures[True]), statistics.median(figures[False])
    runs = ", ".join(f"{s:.1f}" for s in figures[True])
    peer = ", ".join(f"{s:.1f}" for s in figures[False])
    print(
        f"(b) a kill -9 of the service until /health answers 200: supervisor {ours:.1f} s ({runs}),"
        f" the hub's own restart {hub:.1f} s ({peer}); ratio {hub / ours:.1f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a 10 s outage, 10 clients, one kill each way")
    p.add_argument("--cases", default="ab")
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--outage", type=float, default=20.0)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    if args.quick:
        args.clients, args.outage, args.repeat = 10, 10.0, 1
    if "a" in args.cases:
        case_a(args.clients, args.outage)
    if "b" in args.cases:
        case_b(args.repeat)


if __name__ == "__main__":
    main()
