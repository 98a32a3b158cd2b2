"""``yt hpo create|ls|show|stop|resume|extend|clone``: hyperparameter search (docs/hpo.md).

``yt hpo create --from config.yml --vc VC`` takes an NNI v2 experiment config (its
``searchSpaceFile`` and ``trialCodeDirectory`` relative to the file, as in NNI);
``yt hpo create EXPERIMENT.yaml`` our own document. ``--follow`` (on ``create`` and ``show``) shows
a progress bar of trials with the best value until the experiment ends; in a notebook
(``%yt hpo show 3 -f``) a live widget: progress, best value and a small table of trials
(:mod:`yitong_lab.hpo.progress`). In a notebook, ``%%yt hpo create --vc VC --space '{...}'`` runs the
cell as the trial code (it reads ``yitong_lab.hpo.get_params()`` and reports with
``report``/``report_final``, or uses ``nni``'s calls).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from yitong_lab.cli.grammar import UsageError
from yitong_lab.cli.job import refusing
from yitong_lab.units import format_number


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("hpo", help="hyperparameter search: experiments whose trials are jobs")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, func: Any, help: str) -> Any:
        sub = verbs.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(func=refusing(func))
        return sub

    sub = verb("create", create, "create an experiment from a document, an NNI config, or a notebook cell")
    sub.add_argument("doc", metavar="FILE", nargs="?", help="our experiment document (YAML or JSON)")
    sub.add_argument("--from", dest="nni", metavar="CONFIG", help="an NNI v2 experiment config (config.yml)")
    sub.add_argument("--vc", help="the VC (required with --from and in a cell)")
    sub.add_argument("--name", help="experiment name (a-z, 0-9, -)")
    sub.add_argument("--space", help="cell only: the search space as JSON (NNI's format)")
    sub.add_argument("--tuner", default="TPE", help="cell only: TPE, Random, GridSearch, CMAES")
    sub.add_argument("--assessor", help="cell only: Medianstop or Hyperband")
    sub.add_argument("--minimize", action="store_true", help="cell only: minimise the result")
    sub.add_argument("--trials", type=int, default=10, help="cell only: max trials")
    sub.add_argument("--concurrency", type=int, default=1, help="cell only: trials at once")
    sub.add_argument("--follow", "-f", action="store_true", help="show a progress bar until it ends")
    sub = verb("ls", ls, "experiments of your VCs, newest first")
    sub.add_argument("--vc", help="only this VC")
    sub = verb("show", show, "one experiment: its trials and the best one")
    sub.add_argument("id", type=int, metavar="ID")
    sub.add_argument("--follow", "-f", action="store_true", help="show its progress live until it ends")
    for name, func, help in (
        ("stop", stop, "stop an experiment; its running trials are cancelled"),
        ("resume", resume, "run a stopped experiment again"),
    ):
        sub = verb(name, func, help)
        sub.add_argument("id", type=int, metavar="ID")
    sub = verb("extend", extend, "add trials to an experiment's budget")
    sub.add_argument("id", type=int, metavar="ID")
    sub.add_argument("trials", type=int, metavar="N")
    sub = verb("clone", clone, "a new experiment from this one, optionally with a new search space")
    sub.add_argument("id", type=int, metavar="ID")
    sub.add_argument("--space", metavar="FILE", help="a search_space.json for the clone")


# -- pure helpers --------------------------------------------------------------------------------


def summary(exp: dict[str, Any]) -> str:
    best = exp.get("best")
    counts = ", ".join(f"{n} {s}" for s, n in sorted((exp.get("counts") or {}).items())) or "no trials yet"
    line = f"experiment {exp['id']} {exp['name']} ({exp['vc']}): {exp['state']}; {counts}"
    if best:
        line += f"; best {format_number(best['value'])} (trial {best['number']}: {json.dumps(best['params'])})"
    return line + (f" — {exp['reason']}" if exp.get("reason") else "")


def trials_table(exp: dict[str, Any]) -> str:
    rows = [f"{'#':>4}  {'job':>6}  {'state':<9}  {'value':>12}  params"]
    for t in exp.get("trials", []):
        value = "" if t["value"] is None else format_number(t["value"])
        rows.append(
            f"{t['number']:>4}  {t['job_id'] or '':>6}  {t['state']:<9}  {value:>12}  {json.dumps(t['params'])}"
        )
        if t.get("reason") and t["state"] in ("waiting", "failed"):  # why it waits, or its log's end
            rows.extend(f"{'':>14}{line}" for line in t["reason"].splitlines())
    return "\n".join(rows)


def failed(exp: dict[str, Any]) -> str | None:
    """Why an ended experiment failed (pure), or None: stopped because a trial could not be
    submitted, or every trial failed."""
    if exp["state"] == "stopped" and (exp.get("reason") or "").startswith("a trial could not be submitted"):
        return exp["reason"]
    counts = {s: n for s, n in (exp.get("counts") or {}).items() if n}
    if counts and set(counts) == {"failed"}:
        return f"every trial failed ({counts['failed']})"
    return None


def outcome(exp: dict[str, Any]) -> int:
    """``--follow``'s exit code: 1 when the experiment failed (:func:`failed`), else 0."""
    why = failed(exp)
    if why is None:
        return 0
    print(f"yt: experiment {exp['id']} failed: {why}", file=sys.stderr)
    last = sorted((t for t in exp.get("trials") or [] if t.get("state") == "failed"), key=lambda t: t["number"])[-1:]
    for t in last:
        print(f"trial {t['number']}: {t.get('reason') or 'failed'}", file=sys.stderr)
    return 1


def cell_document(args: Any, cell: str, directory: Path) -> dict[str, Any]:
    """The experiment a ``%%yt hpo create`` cell becomes (the cell saved as the trial script)."""
    import hashlib

    if not args.vc or not args.space:
        raise UsageError("%%yt hpo create needs --vc and --space '{...}' (the search space as JSON)")
    try:
        space = json.loads(args.space)
    except ValueError as e:
        raise UsageError(f"--space: not JSON: {e}") from None
    digest = hashlib.sha256(cell.encode()).hexdigest()[:12]
    script = directory / ".yt-cells" / f"hpo-{digest}.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(cell)

    doc: dict[str, Any] = {
        "name": args.name or f"cell-{digest[:8]}",
        "vc": args.vc,
        "space": space,
        "tuner": {"name": args.tuner},
        "objective": {"direction": "minimize" if args.minimize else "maximize"},
        "max_trials": args.trials,
        "concurrency": args.concurrency,
        "template": {
            "environment": {"kernel": "python3"},
            "command": [sys.executable, str(script)],
            "cpu": 1,
            "memory": "1Gi",
        },
        "code": {"path": str(directory)},
    }
    if args.assessor:
        doc["assessor"] = {"name": args.assessor}
    return doc


# -- verbs -----------------------------------------------------------------------------------------


def create(args: Any, client: Any, out: Any) -> int:
    cell = getattr(args, "cell", None)
    if cell is not None:
        if not cell.strip():
            raise UsageError("the cell is empty: write the trial code below %%yt hpo create")
        exp = client.create_experiment(cell_document(args, cell, Path(os.getcwd()).resolve()))
    elif args.nni:
        if not args.vc:
            raise UsageError("--vc: required with --from (an NNI config names no VC)")
        exp = client.create_experiment(nni_config=args.nni, vc=args.vc, name=args.name)
    elif args.doc:
        import yaml

        p = Path(args.doc).expanduser()
        if not p.is_file():
            raise FileNotFoundError(f"{args.doc}: no such experiment file")
        doc = yaml.safe_load(p.read_text())
        if args.vc:
            doc["vc"] = args.vc
        exp = client.create_experiment(doc)
    else:
        raise UsageError("give an experiment file, --from config.yml (NNI), or use %%yt hpo create in a notebook")
    for note in exp.get("notes") or []:
        out.note(f"note: {note}")
    for warning in exp.get("warnings") or []:
        out.note(f"warning: {warning}")
    if not args.follow:
        out.show(exp, summary(exp))
        return 0
    exp = follow(client, exp["id"], out)
    out.show(exp, summary(exp))
    return outcome(exp)


def follow(client: Any, experiment_id: int, out: Any, interval: float = 1.0) -> dict[str, Any]:
    """Finished trials out of the budget, with the best value, until the experiment is done or
    stopped: tqdm's bar, or in a notebook a widget with a small table of trials."""
    from yitong_lab.hpo import progress

    display = progress.make(out.progress, disable=out.json)
    rows = out.progress == "widget"  # the widget's table shows trials; a bar needs only the counts
    exp = client.experiment(experiment_id, trials=rows)
    try:
        while True:
            display.update(exp)
            if exp["state"] in ("done", "stopped"):
                return exp if rows else client.experiment(experiment_id)
            time.sleep(interval)
            exp = client.experiment(experiment_id, trials=rows)
    finally:
        display.close()


def ls(args: Any, client: Any, out: Any) -> None:
    exps = client.experiments(vc=args.vc)
    out.show(exps, "\n".join(summary(e) for e in exps) if exps else "no experiments")


def show(args: Any, client: Any, out: Any) -> int:
    if not getattr(args, "follow", False):
        exp = client.experiment(args.id)
        out.show(exp, summary(exp) + "\n" + trials_table(exp))
        return 0
    exp = follow(client, args.id, out)
    if out.progress != "widget" or out.json:  # the widget shows it
        out.show(exp, summary(exp) + "\n" + trials_table(exp))
    return outcome(exp)


def stop(args: Any, client: Any, out: Any) -> None:
    exp = client.stop_experiment(args.id)
    out.show(exp, summary(exp))


def resume(args: Any, client: Any, out: Any) -> None:
    exp = client.resume_experiment(args.id)
    out.show(exp, summary(exp))


def extend(args: Any, client: Any, out: Any) -> None:
    exp = client.extend_experiment(args.id, args.trials)
    out.show(exp, summary(exp) + f"; budget now {exp['config']['max_trials']} trials")


def clone(args: Any, client: Any, out: Any) -> None:
    patch = {}
    if args.space:
        patch["space"] = json.loads(Path(args.space).expanduser().read_text())
    exp = client.clone_experiment(args.id, patch)
    out.show(exp, f"cloned experiment {args.id} as " + summary(exp))
