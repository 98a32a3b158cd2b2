"""``yt job submit|ls|show|logs|cancel|retry|clone|tensorboard``: batch jobs on your VCs' quota.

``yt job submit SPEC`` sends a spec file (docs/jobs-spec.md; ``--from openpai|pytorchjob`` for
another system's document) and records the code it runs (:mod:`yitong_lab.jobs.code`) from the
current directory or ``--dir``. In a notebook, ``%%yt job submit [options]`` submits the cell
itself (:mod:`yitong_lab.jobs.cell`): the options of the "cell" group build its spec.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from yitong_lab.cli import job_tables as text
from yitong_lab.cli.grammar import UsageError

#: (flag, argparse options) of the spec a cell becomes; ``yt job submit SPEC`` refuses them
CELL_OPTIONS: list[tuple[str, dict[str, Any]]] = [
    ("--name", {"help": "job name (a-z, 0-9, -; default cell-<hash>)"}),
    ("--procs", {"type": int, "metavar": "N", "help": "processes (ranks) per node; N > 1 runs torchrun"}),
    ("--framework", {"choices": ["pytorch", "tensorflow", "mpi", "mindspore", "plain"]}),
    ("--cpu", {"help": "cores per node (2, 500m)"}),
    ("--memory", {"help": "memory per node (4Gi)"}),
    ("--gpus", {"type": int, "metavar": "N", "help": "nvidia.com/gpu per node"}),
    ("--accelerator", {"metavar": "TYPE=N", "help": "any device per node, e.g. huawei.com/Ascend910=1"}),
    ("--input", {"action": "append", "metavar": "VC/NAME@REF[:MOUNT]", "help": "a dataset version (repeatable)"}),
    ("--kernel", {"default": "python3", "help": "environment kernel (default python3)"}),
    ("--image", {"help": "container image (Kubernetes)"}),
    ("--max-run-time", {"metavar": "TIME", "help": "wall-clock limit (90m, 2h)"}),
    ("--priority", {"help": "low, normal, high or -1000..1000"}),
    ("--retries", {"type": int, "metavar": "N"}),
    ("--outputs", {"metavar": "DIR", "help": "outputs directory inside the job's directory"}),
]


def refusing(func: Callable) -> Callable:
    """Bad input (a missing file, a malformed option) is a usage error (exit 2)."""

    @functools.wraps(func)
    def wrapper(args: Any, client: Any, out: Any) -> Any:
        try:
            return func(args, client, out)  # an int is the exit code
        except (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError) as error:
            raise UsageError(str(error)) from None

    return wrapper


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("job", help="batch jobs: submit, list, logs, cancel, retry, clone")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, func: Callable, help: str, json_flag: bool = True, description: str = "") -> Any:
        sub = verbs.add_parser(name, parents=[common] if json_flag else [], help=help, description=description or help)
        sub.set_defaults(func=refusing(func))
        return sub

    sub = verb(
        "submit",
        submit,
        "submit a job spec file (in a notebook, the cell magic submits a cell)",
        description="Submit a job spec (a YAML or JSON file, '-' for stdin; docs/jobs-spec.md). "
        "In a notebook, '%%yt job submit [cell options]' submits the cell itself.",
    )
    sub.add_argument("spec", metavar="SPEC", nargs="?", help="the spec file (docs/jobs-spec.md)")
    sub.add_argument(
        "--from",
        dest="source",
        choices=["openpai", "pytorchjob"],
        help="SPEC is an OpenPAI (protocol v2) job or a Kubeflow PyTorchJob",
    )
    sub.add_argument("--vc", help="the VC (overrides the spec's)")
    sub.add_argument(
        "--dry-run",
        action="store_true",
        help="show the spec (with --from: the converted spec and every note) after the platform's checks; submit nothing",
    )
    sub.add_argument("--dir", metavar="DIR", help="the job's code directory (default: the current one)")
    sub.add_argument("--no-code", action="store_true", help="do not record the code (commit, changes)")
    sub.add_argument("--follow", "-f", action="store_true", help="watch it until it ends, with its log")
    sub.add_argument("--rank", type=int, default=0, metavar="N", help="with --follow: whose log (default 0)")
    group = sub.add_argument_group("cell options (%%yt job submit only)")
    for flag, options in CELL_OPTIONS:
        group.add_argument(flag, **options)
    group.add_argument("--env", action="append", metavar="K=V", help="an environment variable (repeatable)")

    sub = verb("ls", ls, "your jobs (--all: everyone's in your VCs), newest first")
    sub.add_argument("--vc", help="only this VC")
    sub.add_argument(
        "--state",
        choices=["queued", "admitted", "running", "succeeded", "failed", "cancelled", "preempted"],
        help="only jobs in this state",
    )
    sub.add_argument("--all", "-a", action="store_true", help="every user's jobs in your VCs")
    sub = verb("show", show, "one job: state, reason, hosts, ports, devices, access, runs, ranks")
    sub.add_argument("id", type=int, metavar="ID")
    sub = verb("logs", logs, "a rank's log (kept after the job ends); --follow streams it", json_flag=False)
    sub.add_argument("id", type=int, metavar="ID")
    sub.add_argument("--rank", type=int, default=0, metavar="N", help="which rank (default 0)")
    sub.add_argument("--follow", "-f", action="store_true", help="stream until the job ends")
    sub = verb("cancel", cancel, "cancel a queued or running job (yours, or any as admin)")
    sub.add_argument("id", type=int, metavar="ID")
    sub = verb("retry", retry, "queue a failed, cancelled or preempted job again (same id)")
    sub.add_argument("id", type=int, metavar="ID")
    sub = verb("clone", clone, "submit a copy of a job, changed by --set and --env")
    sub.add_argument("id", type=int, metavar="ID")
    sub.add_argument(
        "--set",
        dest="sets",
        action="append",
        metavar="KEY=VALUE",
        help="a spec field (dotted for nested: accelerator.count=2); VALUE is JSON or text",
    )
    sub.add_argument("--env", action="append", metavar="K=V", help="an environment variable of the job")
    sub = verb("tensorboard", tensorboard, "the URL of TensorBoard on the job's outputs directory")
    sub.add_argument("id", type=int, metavar="ID")


# -- pure helpers --------------------------------------------------------------------------------


def parse_value(raw: str) -> Any:
    """``--set`` values: JSON when they parse (``2``, ``null``, ``["python", "x.py"]``), else text."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def clone_patch(sets: list[str] | None, envs: list[str] | None) -> dict[str, Any]:
    """``--set a.b=1 --env K=V`` -> ``{"a": {"b": 1}, "env": {"K": "V"}}`` (maps merge on the service)."""
    from yitong_lab.jobs.cell import parse_pairs

    patch: dict[str, Any] = {}
    for key, raw in parse_pairs(sets, "--set").items():
        parts = key.split(".")
        if any(not p for p in parts):
            raise ValueError(f"--set {key}={raw}: empty field name")
        node = patch
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"--set {key}: {part} is set to a value and a map at once")
        node[parts[-1]] = parse_value(raw)
    env = parse_pairs(envs, "--env")
    if env:
        existing = patch.setdefault("env", {})
        if not isinstance(existing, dict):
            raise ValueError("--env and --set env=... cannot be combined")
        existing.update(env)
    return patch


def tensorboard_url(
    job_id: int, environ: dict[str, str], me: Callable[[], dict[str, Any]] | None = None, api: str = ""
) -> str:
    """The server-extension route ``<server>/yitong/jobs/<id>/tensorboard``: under this server
    (``JUPYTERHUB_PUBLIC_URL`` when the hub knows its public URL, else the path
    ``JUPYTERHUB_SERVICE_PREFIX``); outside one, your default server at the hub the API is under."""
    route = f"yitong/jobs/{job_id}/tensorboard"
    public = environ.get("JUPYTERHUB_PUBLIC_URL") or ""
    if public.startswith(("http://", "https://")):
        return public.rstrip("/") + "/" + route
    prefix = environ.get("JUPYTERHUB_SERVICE_PREFIX")
    if prefix:
        return "/" + prefix.strip("/") + "/" + route
    root, sep, _ = api.partition("/services/")
    if sep and me is not None:
        from urllib.parse import quote

        return f"{root}/user/{quote(me()['name'], safe='')}/{route}"
    raise ValueError("cannot tell where your notebook server is: run this in its terminal or a notebook")


# -- commands ------------------------------------------------------------------------------------


def _read_spec(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    p = Path(path).expanduser()
    if p.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a job spec")
    if not p.exists():
        raise FileNotFoundError(f"{path}: no such spec file")
    return p.read_text()


def _cell_options_given(args: Any) -> list[str]:
    flags = []
    for flag, options in CELL_OPTIONS:
        dest = flag[2:].replace("-", "_")
        value = getattr(args, dest, None)
        # identity, not ==: `--gpus 0` is given (0 == False), and refused like `--gpus 1`
        if (
            value is not None
            and value is not False
            and not (isinstance(value, str) and value == options.get("default"))
        ):
            flags.append(flag)
    return flags + (["--env"] if args.env else [])


def submit(args: Any, client: Any, out: Any) -> int | None:
    cell = getattr(args, "cell", None)
    if cell is not None:
        submit_cell(args, client, out, cell)
        return None
    if not args.spec:
        raise UsageError(
            "give a spec file (yt job submit train.yaml), or in a notebook put the "
            "script in a cell under %%yt job submit"
        )
    given = _cell_options_given(args)
    if given:
        raise UsageError(f"{', '.join(given)}: only for %%yt job submit cells; put them in the spec file")
    body: Any = _read_spec(args.spec)
    if not args.source:
        from yitong_lab.jobs.cell import with_defaults
        from yitong_lab.jobs.sdk import yaml_map

        doc = yaml_map(body)
        # only a map that lacks a default is rewritten: other text goes as it is, so the service
        # reads (and names lines of) the person's own file
        if doc is not None and (not (doc.get("vc") or args.vc) or "environment" not in doc):
            body = with_defaults(doc, args.vc, client.me)
    if args.dry_run:
        preview = client.preview_job(body, source=args.source, vc=args.vc)
        out.show(preview, text.preview_text(preview))
        return 1 if preview.get("refused") else 0
    directory = None if args.no_code or args.source else (args.dir or os.getcwd())
    job = client.submit_job(body, source=args.source, vc=args.vc, directory=directory)
    _submitted(job, args, client, out)
    return None


def submit_cell(args: Any, client: Any, out: Any, cell: str) -> None:
    from yitong_lab.jobs import cell as cells

    if args.spec or args.source:
        raise UsageError("%%yt job submit takes the cell as the job: give options, not a spec file")
    if not cell.strip():
        raise UsageError("the cell is empty: write the script to run below %%yt job submit")
    directory = Path(args.dir or os.getcwd()).resolve()
    if not directory.is_dir():
        raise NotADirectoryError(f"{directory} is not a directory")
    vc = cells.default_vc(args.vc, client.me)
    name = args.name or f"cell-{cells.cell_name(cell)[:8]}"
    script = directory / cells.CELLS / f"{cells.cell_name(cell)}.py"
    spec = cells.cell_spec(
        str(script),
        vc=vc,
        name=name,
        kernel=args.kernel,
        image=args.image,
        procs=args.procs,
        framework=args.framework,
        cpu=args.cpu,
        memory=args.memory,
        accelerator=cells.accelerator(args.gpus, args.accelerator),
        env=cells.parse_pairs(args.env, "--env"),
        inputs=cells.inputs(args.input),
        max_run_time=args.max_run_time,
        priority=args.priority,
        retries=args.retries,
        outputs=args.outputs,
    )
    if args.dry_run:
        out.show(spec, json.dumps(spec, indent=2))
        return
    cells.save_cell(cell, directory)
    job = client.submit_job(spec, directory=None if args.no_code else directory)
    _submitted(job, args, client, out)


def _submitted(job: dict[str, Any], args: Any, client: Any, out: Any) -> None:
    if not args.follow:
        out.show(job, text.submitted_text(job))
        return
    out.note(text.submitted_text(job))
    from yitong_lab.jobs.follow import follow

    final = follow(client, job["id"], rank=args.rank, logs=not out.json, display=out.progress)
    if out.json:
        out.show(final, "")
    from yitong_lab.jobs.sdk import TERMINAL

    if final.get("state") in TERMINAL and final["state"] != "succeeded":
        from yitong_lab.client import YitongError
        from yitong_lab.jobs.follow import state_line

        raise YitongError(0, state_line(final))


def ls(args: Any, client: Any, out: Any) -> None:
    user = None if args.all else client.me()["name"]
    jobs = client.jobs(vc=args.vc, state=args.state, user=user)
    empty = "no jobs" + ("" if args.all else " of yours (--all: everyone's in your VCs)")
    out.show(jobs, text.jobs_table(jobs) if jobs else empty)


def show(args: Any, client: Any, out: Any) -> None:
    job = client.job(args.id)
    out.show(job, text.job_details(job))


def logs(args: Any, client: Any, out: Any) -> None:
    if not args.follow:
        sys.stdout.write(client.job_log(args.id, rank=args.rank))
        sys.stdout.flush()
        return
    from yitong_lab.jobs.follow import follow

    follow(client, args.id, rank=args.rank, display=out.progress)


def cancel(args: Any, client: Any, out: Any) -> None:
    job = client.cancel_job(args.id)
    if job["state"] == "cancelled":
        message = f"job {job['id']} cancelled"
    else:
        message = f"job {job['id']}: cancel requested ({job['state']}; cancelled when its processes end)"
    out.show(job, message)


def retry(args: Any, client: Any, out: Any) -> None:
    job = client.retry_job(args.id)
    out.show(job, f"job {job['id']} queued again (attempt {int(job.get('attempts') or 0) + 1})")


def clone(args: Any, client: Any, out: Any) -> None:
    job = client.clone_job(args.id, clone_patch(args.sets, args.env))
    out.show(job, f"cloned job {args.id} as " + text.submitted_text(job).removeprefix("submitted "))


def tensorboard(args: Any, client: Any, out: Any) -> None:
    client.job(args.id)  # visible to you? (the route checks again with the server's token)
    url = tensorboard_url(args.id, dict(os.environ), client.me, client.url)
    if out.progress == "widget" and not out.json:
        from html import escape

        from IPython.display import display

        link = f'<a href="{escape(url)}" target="_blank">TensorBoard of job {args.id}</a>'
        display({"text/html": link, "text/plain": url}, raw=True)
        return
    out.show({"id": args.id, "url": url}, url)
