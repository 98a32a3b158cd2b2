"""``yt run show|rerun``: the ledger record of one job attempt, and submitting it again."""

from __future__ import annotations

from typing import Any

from yitong_lab.cli import job_tables as text


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("run", help="the ledger: what a job attempt ran on, and rerunning it")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    sub = verbs.add_parser(
        "show",
        parents=[common],
        help="datasets, code, environment, devices, parameters, metrics and artifacts of one run",
    )
    sub.add_argument("id", type=int, metavar="ID", help="a run id (yt job show lists a job's runs)")
    sub.set_defaults(func=show)
    sub = verbs.add_parser(
        "rerun",
        parents=[common],
        help="submit the run again as a new job: same spec and code, inputs pinned to the same dataset versions",
    )
    sub.add_argument("id", type=int, metavar="ID")
    sub.set_defaults(func=rerun)


def show(args: Any, client: Any, out: Any) -> None:
    run = client.run(args.id)
    out.show(run, text.run_details(run))


def rerun(args: Any, client: Any, out: Any) -> None:
    job = client.rerun(args.id)
    out.show(job, f"rerun of run {args.id}: " + text.submitted_text(job))
