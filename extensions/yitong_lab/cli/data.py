"""``yt data create|ls|commit|log|show|diff|tag|pull|open|rm|gc|verify``: versioned datasets.

Names: ``vc/name`` is a dataset, ``vc/name@ref`` one of its versions (``ref``: a number,
``v<number>``, a tag or ``latest``, the default).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from yitong_lab.cli import data_tables as text
from yitong_lab.cli.grammar import UsageError


def _datasets(client: Any) -> Any:
    from yitong_lab.datasets.sdk import Datasets

    return Datasets(client)


def refusing(func: Callable) -> Callable:
    """A bad name or a missing directory is a usage error (exit 2), not a traceback."""

    @functools.wraps(func)
    def wrapper(args: Any, client: Any, out: Any) -> None:
        try:
            func(args, client, out)
        except (ValueError, FileNotFoundError, NotADirectoryError) as error:
            raise UsageError(str(error)) from None
        except OSError as error:
            from yitong_lab.client import YitongError

            raise YitongError(0, str(error)) from None

    return wrapper


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("data", help="versioned datasets: commit, pull, diff, tag, open")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, func: Callable, help: str) -> Any:
        sub = verbs.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(func=refusing(func))
        return sub

    sub = verb("create", create, "create an empty dataset")
    sub.add_argument("dataset", metavar="VC/NAME")
    sub.add_argument("--private", action="store_true", help="only you (and admins) can see it")
    sub.add_argument("-d", "--description", default="", help="a sentence about the data")
    sub = verb("ls", ls, "the datasets you can see")
    sub.add_argument("--vc", help="only this VC's datasets")
    sub = verb("commit", commit, "make a directory the next version (creates the dataset if missing)")
    sub.add_argument("path", metavar="PATH", help="the directory (or single file) to commit")
    sub.add_argument("dataset", metavar="VC/NAME")
    sub.add_argument("-m", "--message", default="", help="what changed")
    sub.add_argument("--private", action="store_true", help="when creating: only you can see it")
    sub.add_argument("-d", "--description", default="", help="when creating: a sentence about the data")
    sub.add_argument("--no-cache", action="store_true", help="hash every file (ignore the stat cache)")
    sub = verb("log", log, "versions of a dataset, newest first")
    sub.add_argument("dataset", metavar="VC/NAME")
    sub = verb("show", show, "one version and its files")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub = verb("diff", diff, "files added, removed, changed between two versions (one version: against its parent)")
    sub.add_argument("ref", metavar="VC/NAME@A")
    sub.add_argument("other", metavar="@B", nargs="?")
    sub = verb("tag", tag, "name a version (tags move); --delete removes a tag")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub.add_argument("tag", metavar="TAG")
    sub.add_argument("--delete", action="store_true", help="remove the tag")
    sub = verb("pull", pull, "download a version into a directory (only missing or changed files)")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub.add_argument("directory", metavar="DIR")
    sub.add_argument("--delete", action="store_true", help="remove files the version does not have")
    sub.add_argument("--no-cache", action="store_true", help="hash every local file")
    sub = verb("open", open_, "print the read-only local path of a version (materialised by the service)")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub = verb("rm", rm, "delete a version (VC/NAME@REF) or a whole dataset (VC/NAME)")
    sub.add_argument("ref", metavar="VC/NAME[@REF]")
    sub.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    verb("gc", gc, "remove stored objects no version uses (admin)")
    verb("verify", verify, "re-hash the store, report corrupt or missing objects (admin)")


def create(args: Any, client: Any, out: Any) -> None:
    d = _datasets(client).create(args.dataset, description=args.description, private=args.private)
    out.show(d, f"created dataset {d['vc']}/{d['name']} ({d.get('visibility', 'vc')})")


def ls(args: Any, client: Any, out: Any) -> None:
    rows = _datasets(client).list(vc=args.vc)
    out.show(rows, text.datasets_table(rows) if rows else "no datasets: yt data commit DIR VC/NAME -m ...")


def commit(args: Any, client: Any, out: Any) -> None:
    v = _datasets(client).commit(
        args.path,
        args.dataset,
        args.message,
        progress=out.progress,
        description=args.description,
        private=args.private,
        stat_cache=not args.no_cache,
    )
    out.show(v, text.commit_text(v))


def log(args: Any, client: Any, out: Any) -> None:
    versions = _datasets(client).versions(args.dataset)
    out.show(versions, text.versions_table(versions) if versions else f"{args.dataset} has no versions yet")


def show(args: Any, client: Any, out: Any) -> None:
    ds = _datasets(client)
    v = ds.version(args.ref)
    files = ds.manifest(f"{v['dataset']}@{v['number']}")["files"]
    out.show({**v, "manifest_files": files}, text.version_details(v, files))


def diff(args: Any, client: Any, out: Any) -> None:
    d = _datasets(client).diff(args.ref, args.other)
    out.show(d, text.diff_text(args.ref.partition("@")[0], d))


def tag(args: Any, client: Any, out: Any) -> None:
    ds = _datasets(client)
    if args.delete:
        ds.untag(args.ref.partition("@")[0], args.tag)
        out.show({"deleted": args.tag}, f"removed tag {args.tag} from {args.ref.partition('@')[0]}")
        return
    v = ds.tag(args.ref, args.tag)
    out.show(v, f"tagged {v['dataset']} v{v['number']} as {args.tag}")


def pull(args: Any, client: Any, out: Any) -> None:
    r = _datasets(client).pull(
        args.ref, args.directory, delete=args.delete, progress=out.progress, stat_cache=not args.no_cache
    )
    out.show(r, text.pull_text(r))


def open_(args: Any, client: Any, out: Any) -> None:
    path = _datasets(client).open(args.ref)
    out.show({"path": path}, path)


def rm(args: Any, client: Any, out: Any) -> None:
    what = f"version {args.ref}" if "@" in args.ref else f"dataset {args.ref} and all its versions"
    if not args.yes:
        if not sys.stdin or not sys.stdin.isatty():
            raise UsageError(f"deleting {what} cannot be undone: repeat with --yes")
        if input(f"Delete {what}? [y/N] ").strip().lower() not in ("y", "yes"):
            out.note("not deleted")
            return
    _datasets(client).delete(args.ref)
    out.show({"deleted": args.ref}, f"deleted {what}")


def gc(args: Any, client: Any, out: Any) -> None:
    r = _datasets(client).gc()
    out.show(r, text.gc_text(r))


def verify(args: Any, client: Any, out: Any) -> None:
    r = _datasets(client).verify()
    out.show(r, text.verify_text(r))
    cached = len(r.get("cache_corrupt") or [])
    if r.get("corrupt") or r.get("missing") or cached:
        from yitong_lab.client import YitongError

        raise YitongError(
            1,
            f"the store has {len(r.get('corrupt') or [])} corrupt and "
            f"{len(r.get('missing') or [])} missing objects"
            + (f"; {cached} objects of the materialise cache were changed" if cached else ""),
        )
