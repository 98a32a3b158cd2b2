"""``yt ssh-key add|ls|rm`` (your public keys) and ``yt ssh [TARGET] [--dry-run] [-- COMMAND]``
(the system ``ssh`` into your notebook server or a running job's worker, through the gateway)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

from yitong_lab.cli.grammar import UsageError
from yitong_lab.cli.output import table


def register(nouns: Any, common: Any) -> None:
    parser = nouns.add_parser("ssh-key", help="your SSH public keys (what the SSH gateway lets you in with)")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    sub = verbs.add_parser("add", parents=[common], help="add a public key (a .pub file, or - for stdin)")
    sub.add_argument("path", metavar="PUBFILE", nargs="?", default="~/.ssh/id_ed25519.pub")
    sub.set_defaults(func=add)
    verbs.add_parser("list", aliases=["ls"], parents=[common], help="your keys and their fingerprints").set_defaults(
        func=ls
    )
    sub = verbs.add_parser("remove", aliases=["rm"], parents=[common], help="remove one key")
    sub.add_argument("id", type=int, metavar="ID")
    sub.set_defaults(func=rm)

    sub = nouns.add_parser(
        "ssh",
        help="ssh into your notebook server or a running job's worker",
        description="TARGET: empty = your default server; NAME or server:NAME = a named server;"
        " JOB or JOB:RANK = a running job's worker. Everything after -- is the remote command.",
    )
    sub.add_argument("target", nargs="?", default="", metavar="TARGET")
    sub.add_argument("--dry-run", action="store_true", help="print the ssh command instead of running it")
    sub.add_argument("-i", "--identity", help="the private key file (ssh -i)")
    sub.set_defaults(func=ssh, takes_rest="COMMAND")  # the words after -- (grammar.run)


def add(args: Any, client: Any, out: Any) -> None:
    if args.path == "-":
        text = sys.stdin.read()
    else:
        path = Path(os.path.expanduser(args.path))
        if not path.name.endswith(".pub"):
            raise UsageError(f"{path} is not a .pub file: give the public key, never the private one")
        try:
            text = path.read_text()
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror}") from None
    key = client.add_ssh_key(text.strip())
    out.show(key, f"added key {key['id']}: {key['fingerprint']} ({key['algorithm']}) {key['comment']}".rstrip())


def ls(args: Any, client: Any, out: Any) -> None:
    keys = client.ssh_keys()
    rows = [[str(k["id"]), k["algorithm"], str(k["bits"]), k["fingerprint"], k["comment"]] for k in keys]
    out.show(keys, table(["ID", "TYPE", "BITS", "FINGERPRINT", "COMMENT"], rows) if keys else "no SSH keys")


def rm(args: Any, client: Any, out: Any) -> None:
    client.remove_ssh_key(args.id)
    out.show({"removed": args.id}, f"removed key {args.id}")


def known_hosts_file() -> Path:
    """The gateway's host key, kept beside the stat cache (``$YITONG_CACHE_DIR``, ``~/.cache/yitong``)."""
    from yitong_lab.datasets.statcache import cache_dir

    return cache_dir() / "ssh_known_hosts"


def ssh(args: Any, client: Any, out: Any) -> int:
    from yitong_lab.ssh.command import known_hosts_line, login_name, ssh_argv

    info = client.ssh_info()
    if not info["enabled"]:
        raise UsageError("this platform runs no SSH gateway (settings: ssh.port)")
    try:
        login = login_name(info["login"], args.target)
    except ValueError as e:
        raise UsageError(str(e)) from None
    known = known_hosts_file()
    argv = ssh_argv(login, info["host"], info["port"], str(known), args.rest, args.identity)
    if args.dry_run:
        print(shlex.join(argv))
        return 0
    if not args.rest and not sys.stdin.isatty():
        raise UsageError("an interactive shell needs a terminal: run yt ssh in one, or give a command after --")
    line = known_hosts_line(info["host"], info["port"], info["host_key"])
    known.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not known.exists() or line not in known.read_text():
        with open(known, "a") as f:
            f.write(line)
    import subprocess

    sys.stdout.flush()
    return subprocess.run(argv).returncode
