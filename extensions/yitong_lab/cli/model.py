"""``yt model create|ls|register|log|show|alias|compare|convert|batch|batch-show|pull|rm``: the model registry.

Names: ``vc/name`` is a model, ``vc/name@ref`` one of its versions (``ref``: a number,
``v<number>``, an alias such as ``production``, or ``latest``, the default).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from yitong_lab.cli import model_tables as text
from yitong_lab.cli.data import refusing
from yitong_lab.cli.grammar import UsageError


def _models(client: Any) -> Any:
    from yitong_lab.models.sdk import Models

    return Models(client)


def pairs(values: list[str] | None, what: str, number: bool = False) -> dict[str, Any]:
    """``["accuracy=0.93"]`` -> ``{"accuracy": 0.93}``; a UsageError with a sentence."""
    out: dict[str, Any] = {}
    for item in values or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"{what} {item!r}: write KEY=VALUE")
        if number:
            try:
                out[key] = float(value)
            except ValueError:
                raise UsageError(f"{what} {item!r}: {value!r} is not a number") from None
        else:
            out[key] = value
    return out


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("model", help="the model registry: register, alias, compare, pull")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, func: Callable, help: str) -> Any:
        sub = verbs.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(func=refusing(func))
        return sub

    sub = verb("create", create, "create an empty model")
    sub.add_argument("model", metavar="VC/NAME")
    sub.add_argument("-d", "--description", default="", help="a sentence about the model")
    sub = verb("ls", ls, "the models of your VCs")
    sub.add_argument("--vc", help="only this VC's models")
    sub = verb("register", register_, "a new version from a directory or a finished job's outputs")
    sub.add_argument("model", metavar="VC/NAME")
    sub.add_argument("path", metavar="PATH", nargs="?", help="a directory or file (with --from-job: under its outputs)")
    sub.add_argument("--from-job", type=int, metavar="ID", help="a succeeded job of the model's VC")
    sub.add_argument("--path", dest="job_path", metavar="PATH", help="with --from-job: a path under its outputs")
    sub.add_argument("--framework", default="", help="e.g. sklearn, pytorch, onnx")
    sub.add_argument("--format", default="", help="e.g. joblib, onnx, safetensors")
    sub.add_argument("--signature", metavar="FILE", help='a JSON file: {"inputs": [...], "outputs": [...]}')
    sub.add_argument("--metric", action="append", metavar="KEY=NUMBER", help="a metric (repeat)")
    sub.add_argument("--tag", action="append", metavar="KEY=VALUE", help="a tag (repeat)")
    sub.add_argument("-m", "--message", default="", help="what this version is")
    sub = verb("log", log, "versions of a model, newest first")
    sub.add_argument("model", metavar="VC/NAME")
    sub = verb("show", show, "one version: metadata, metrics, lineage")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub = verb("alias", alias, "point an alias (production) at a version; it moves; --delete removes it")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub.add_argument("alias", metavar="ALIAS")
    sub.add_argument("--delete", action="store_true", help="remove the alias")
    sub = verb("compare", compare, "versions' metrics side by side (default: every version)")
    sub.add_argument("model", metavar="VC/NAME")
    sub.add_argument("versions", metavar="REF", nargs="*")
    sub = verb(
        "convert", convert, "a scikit-learn or PyTorch version to ONNX, checked on sample inputs, as a new version"
    )
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub.add_argument("--to", choices=["onnx"], default="onnx")
    sub.add_argument(
        "--python",
        help="an interpreter with the framework, its converter (skl2onnx; torch with onnxscript) and onnxruntime "
        "(default: this one; make mlserver's .venv-mlserver/bin/python has them)",
    )
    sub = verb(
        "batch",
        batch,
        "batch inference: predict over a dataset version's CSV and Parquet files into a new dataset version",
    )
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub.add_argument("--input", required=True, metavar="VC/DATASET[@REF]", help="the dataset version to predict on")
    sub.add_argument(
        "--output", required=True, metavar="VC/DATASET", help="the dataset the predictions become a version of"
    )
    sub.add_argument(
        "--columns", metavar="A,B,...", help="feature columns in the model's order (default: all but --keep)"
    )
    sub.add_argument("--keep", metavar="A,B,...", help="columns copied beside each prediction (an id)")
    sub.add_argument("--path", default="", help="a CSV or Parquet file or folder in the input version (default: all)")
    sub.add_argument("--chunk-rows", type=int, default=100_000, metavar="N", help="rows per chunk, the unit of resume")
    sub.add_argument("--cpu", default="1", help="CPUs the job holds in the VC")
    sub.add_argument("--memory", default="2Gi", help="memory the job holds in the VC")
    sub.add_argument("--retries", type=int, default=2, help="attempts after a failure; each resumes")
    sub.add_argument("--wait", type=float, default=0, metavar="SECONDS", help="wait for the job to end (0: do not)")
    sub = verb("batch-show", batch_show, "a batch inference job: state, progress, output version")
    sub.add_argument("job", type=int, metavar="JOB")
    sub = verb("pull", pull, "download a version's files into a directory")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub.add_argument("directory", metavar="DIR")
    sub = verb("rm", rm, "delete a version (VC/NAME@REF) or a whole model (VC/NAME)")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")


def create(args: Any, client: Any, out: Any) -> None:
    m = _models(client).create(args.model, description=args.description)
    out.show(m, f"created model {m['full_name']} (its files: dataset {m['dataset']})")


def ls(args: Any, client: Any, out: Any) -> None:
    rows = _models(client).list(vc=args.vc)
    out.show(rows, text.models_table(rows) if rows else "no models: yt model register VC/NAME DIR")


def register_(args: Any, client: Any, out: Any) -> None:
    signature = None
    if args.signature:
        with open(args.signature) as f:
            try:
                signature = json.load(f)
            except json.JSONDecodeError as error:
                raise UsageError(f"--signature {args.signature}: not JSON ({error})") from None
    if args.from_job is None and args.job_path:
        raise UsageError("--path goes with --from-job; give a local directory as PATH")
    if args.from_job is None and not args.path:
        raise UsageError("give a directory (or file) to register, or --from-job ID")
    v = _models(client).register(
        args.model,
        args.job_path or args.path if args.from_job is not None else args.path,
        job=args.from_job,
        framework=args.framework,
        format=args.format,
        signature=signature,
        metrics=pairs(args.metric, "--metric", number=True),
        tags=pairs(args.tag, "--tag"),
        lineage={"registered_from": "notebook"} if out.progress == "widget" else {},
        message=args.message,
        progress=out.progress,
    )
    out.show(v, f"registered {v['model']} v{v['number']}: {text.plural(v['files'], 'file')}, {text.size(v['bytes'])}")


def log(args: Any, client: Any, out: Any) -> None:
    versions = _models(client).versions(args.model)
    out.show(versions, text.versions_table(versions) if versions else f"{args.model} has no versions yet")


def show(args: Any, client: Any, out: Any) -> None:
    v = _models(client).version(args.ref)
    out.show(v, text.version_details(v))


def alias(args: Any, client: Any, out: Any) -> None:
    models = _models(client)
    model = args.ref.partition("@")[0]
    if args.delete:
        models.unalias(model, args.alias)
        out.show({"deleted": args.alias}, f"removed alias {args.alias} from {model}")
        return
    v = models.alias(args.ref, args.alias)
    out.show(v, f"{v['model']}@{args.alias} is now v{v['number']}")


def compare(args: Any, client: Any, out: Any) -> None:
    c = _models(client).compare(args.model, args.versions or None)
    out.show(c, text.compare_table(c))


def convert(args: Any, client: Any, out: Any) -> None:
    from yitong_lab.models.sdk import convert as run_convert

    v = run_convert(_models(client), args.ref, python=args.python, progress=out.progress)
    check = v["lineage"]["check"]
    out.show(
        v,
        f"registered {v['model']} v{v['number']} (ONNX of {v['lineage']['converted_from']}): "
        f"{check['rows']} sample rows agree (largest difference {check['max_abs_diff']:.2g})",
    )


def _names(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def batch(args: Any, client: Any, out: Any) -> None:
    b = _models(client).batch(
        args.ref,
        args.input,
        args.output,
        columns=_names(args.columns),
        keep=_names(args.keep),
        path=args.path,
        chunk_rows=args.chunk_rows,
        cpu=args.cpu,
        memory=args.memory,
        retries=args.retries,
        wait=args.wait,
    )
    out.show(b, text.batch_line(b))


def batch_show(args: Any, client: Any, out: Any) -> None:
    b = _models(client).batch_status(args.job)
    out.show(b, text.batch_line(b))


def pull(args: Any, client: Any, out: Any) -> None:
    r = _models(client).pull(args.ref, args.directory, progress=out.progress)
    out.show(r, f"pulled {args.ref} into {args.directory}")


def rm(args: Any, client: Any, out: Any) -> None:
    _models(client).delete(args.ref)
    out.show({"deleted": args.ref}, f"deleted {args.ref}")
