"""Admission rate of the local queue: 10,000 queued jobs over 3 VCs (issue 4, bench (b)).

    .venv/bin/python bench/jobs_queue.py [--jobs 10000] [--postgres URL]

Jobs are submitted through the same code as ``POST /jobs`` (``records.create``), untimed; then
``queue.admit_pass`` runs until the queue is empty, timed. Two shapes: (1) quotas that admit
every job (admissions/s), (2) quotas that admit a few per VC and leave the rest waiting (a pass
over a long blocked queue, which the manager repeats every tick). Target: >= 2,000
admissions/s. SQLite by default; ``--postgres`` runs the same on PostgreSQL.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

from sqlalchemy import func, select

from yitong_services.core.authz import Person
from yitong_services.core.db import Database
from yitong_services.jobs import queue, records, states
from yitong_services.jobs.models import Job
from yitong_services.jobs.spec import spec_from_dict
from yitong_services.vcs.models import VC

VCS = ("vision", "nlp", "speech")


def setup(db: Database, jobs: int, per_job_cpu: float, quota_cpu: float) -> None:
    with db.session() as s, s.begin():
        for name in VCS:
            s.add(
                VC(
                    name=name,
                    description="",
                    quota={"cpu": quota_cpu, "memory": 2**50},
                    user_caps={},
                    groups=[name],
                    profiles=[],
                )
            )
    people = {vc: Person(name=f"user-{vc}", groups=[vc]) for vc in VCS}
    inventory = {"cpu": 1e6, "memory": 2**60}
    with db.session() as s, s.begin():
        for i in range(jobs):
            vc = VCS[i % len(VCS)]
            spec = spec_from_dict(
                {
                    "name": f"noop-{i}",
                    "vc": vc,
                    "environment": {"kernel": "python3"},
                    "command": ["true"],
                    "cpu": per_job_cpu,
                    "memory": "64Mi",
                }
            )
            records.create(s, people[vc], spec, {}, inventory, "local")


def count(db: Database, state: str) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(Job).where(Job.state == state))


def run_shape(url: str, jobs: int, quota_cpu: float, label: str) -> dict:
    db = Database(url)
    db.upgrade()
    setup(db, jobs, 1.0, quota_cpu)
    inventory = {"cpu": 1e6, "memory": 2**60}
    t0 = time.perf_counter()
    admitted = queue.admit_pass(db, inventory)
    first_pass = time.perf_counter() - t0
    total = len(admitted)
    while count(db, states.QUEUED) and len(admitted):
        admitted = queue.admit_pass(db, inventory)
        total += len(admitted)
    elapsed = time.perf_counter() - t0
    waiting = count(db, states.QUEUED)
    db.dispose()
    out = {
        "shape": label,
        "jobs": jobs,
        "admitted": total,
        "waiting": waiting,
        "seconds": elapsed,
        "first_pass_s": first_pass,
        "per_s": total / elapsed if total else 0.0,
    }
    print(
        f"  {label:<28} {total:>6} admitted, {waiting:>6} waiting in {elapsed:7.2f} s"
        f"  -> {out['per_s']:8.0f} admissions/s (first pass {first_pass:.2f} s)"
    )
    return out


def wipe_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--postgres", help="also run on this PostgreSQL URL (its public schema is WIPED)")
    args = p.parse_args(argv)
    results = {}
    targets = [("sqlite", None)] + ([("postgresql", args.postgres)] if args.postgres else [])
    for kind, pg in targets:
        print(f"(b) admission, {args.jobs} queued jobs over {len(VCS)} VCs, {kind}:")
        for label, quota_cpu in (("all fit", float(args.jobs)), ("10 fit per VC, rest wait", 10.0)):
            if pg:
                wipe_postgres(pg)
                url = pg
            else:
                url = f"sqlite:///{tempfile.mkdtemp(prefix='yt-bench-queue-')}/db.sqlite"
            results[(kind, label)] = run_shape(url, args.jobs, quota_cpu, label)
    fit = results[("sqlite", "all fit")]["per_s"]
    print(f"target >= 2000 admissions/s: {'met' if fit >= 2000 else 'NOT met'} ({fit:.0f}/s on SQLite)")
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
