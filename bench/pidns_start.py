"""The start cost of a job attempt's own PID namespace (core/pidns.py), as root.

    sudo .venv/bin/python bench/pidns_start.py [--attempts 100] [-- PROGRAM ARGS...]

Starts the local runner's fork server (jobs/runner_local.ForkServer) and asks it for attempts
of ``PROGRAM`` (default ``/bin/true``) as ``nobody``, with and without ``pid_namespace``, in three
alternating rounds; each attempt is timed from the request to the wrapper's end (its exit record
written, the anchor gone: what the service waits for). Prints one line::

    (a) N attempts of PROGRAM through the fork server: median X ms without, Y ms with a PID namespace, ratio R

R = without / with (1.0: free). The machine's load moves both sides; compare runs on a quiet one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "services"))

from yitong_services.jobs.runner_local import ForkServer, job_base_env

NOBODY = 65534


async def attempts(root: str, command: list[str], n: int, isolate: bool) -> list[float]:
    server = ForkServer(job_base_env(os.environ))
    times = []
    try:
        for i in range(n + 5):  # the first five warm the server up
            here = os.path.join(root, f"{int(isolate)}-{time.monotonic_ns()}-{i}")
            os.mkdir(here)
            os.chown(here, NOBODY, NOBODY)
            request = {
                "argv": [here, "0", "--", *command],
                "env": {"PATH": "/usr/bin:/bin"},
                "cwd": root,
                "uid": NOBODY,
                "gid": NOBODY,
                "pid_namespace": isolate,
            }
            start = time.perf_counter()
            pid = await server.spawn(request)
            try:
                fd = os.pidfd_open(pid)
                select.select([fd], [], [])
                os.close(fd)
            except ProcessLookupError:  # it ended (and was reaped) already
                pass
            took = time.perf_counter() - start
            with open(os.path.join(here, "pid")) as f:  # noqa: ASYNC230 (a bench: one small read)
                record = f.read().splitlines()
            assert len(record) == 2 and json.loads(record[1])["exit_code"] == 0, record
            if i >= 5:
                times.append(took)
    finally:
        server.close()
    return times


async def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--attempts", type=int, default=100, help="attempts per side and round")
    p.add_argument("command", nargs="*", default=["/bin/true"])
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("run as root: namespaces and the account's uid need it")
    root = tempfile.mkdtemp(prefix="yitong-pidns-bench-", dir="/var/tmp")
    os.chmod(root, 0o711)
    try:
        sides: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(3):
            for isolate in (False, True):
                sides[isolate] += await attempts(root, args.command, args.attempts, isolate)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    off, on = statistics.median(sides[False]), statistics.median(sides[True])
    print(
        f"(a) {len(sides[False])} attempts of {' '.join(args.command)} through the fork server: median "
        f"{off * 1e3:.2f} ms without, {on * 1e3:.2f} ms with a PID namespace, ratio {off / on:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
