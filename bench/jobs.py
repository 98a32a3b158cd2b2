"""Jobs, side by side in one run (issue 4): the three benchmarks of docs/benchmarks.md.

    .venv/bin/python bench/jobs.py [--slurm-jobs 2000] [--queue-jobs 10000] [--ddp-rounds 3] [--skip a,b,c]

(a) ``bench/jobs_slurm.py``: submit and start N no-op jobs through Yitong's Slurm backend vs a
    bare ``sbatch`` loop on the same Slurm                       target: >= 1x sbatch
(b) ``bench/jobs_queue.py``: the local queue's admission rate with 10,000 queued jobs over 3 VCs
                                                                 target: >= 2,000 admissions/s
(c) ``bench/jobs_ddp.py``: a 2-process DDP job, submit -> first step and steady step time vs
    bare torchrun                                  target: <= 1 s added, >= 0.98x throughput
Each part also runs alone (its own ``--help``). (a) needs a running Slurm (``.ci/services.sh``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--slurm-jobs", type=int, default=2000)
    p.add_argument("--queue-jobs", type=int, default=10_000)
    p.add_argument("--ddp-rounds", type=int, default=3)
    p.add_argument("--skip", default="", help="comma-separated parts to skip: a, b, c")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if "b" not in skip:
        import jobs_queue

        jobs_queue.main(["--jobs", str(args.queue_jobs)])
    if "c" not in skip:
        import jobs_ddp

        jobs_ddp.main(["--rounds", str(args.ddp_rounds)])
    if "a" not in skip:
        import jobs_slurm

        sys.argv = [sys.argv[0], "--jobs", str(args.slurm_jobs)]
        jobs_slurm.main()


if __name__ == "__main__":
    main()
