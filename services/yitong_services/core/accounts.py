"""System accounts for people: the one mapping from a hub user name to a Unix account.

User code (notebooks, terminals, jobs) never runs as root nor as the account that holds the
platform's secrets. On a multi-user machine every hub user maps to a system account
``yt-<name>`` (``account_name``), created on first use (``ensure_account``) with its home under
the data directory, the way JupyterHub's LocalProcessSpawner maps users to system accounts,
but with a prefix so that a hub user called ``root`` or ``daemon`` can never become that account.

Names that are not valid Unix names as they are (upper case, dots, ``@``, longer than 32
characters) are folded to ``[a-z0-9_-]`` and get a short hash of the hub name, so two hub users
never share an account: ``Alice.Smith@corp`` -> ``yt-alice-smith-corp-5d41a3``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

PREFIX = "yt-"
MAX_LEN = 32  # useradd's limit on Linux
_VALID = re.compile(r"^[a-z_][a-z0-9_-]*$")
_FOLD = re.compile(r"[^a-z0-9_-]+")


def account_name(hub_name: str) -> str:
    """The Unix account of hub user ``hub_name`` (pure; stable across releases)."""
    candidate = PREFIX + hub_name
    if _VALID.match(hub_name.lower()) and hub_name == hub_name.lower() and len(candidate) <= MAX_LEN:
        return candidate
    digest = hashlib.blake2s(hub_name.encode(), digest_size=3).hexdigest()
    folded = _FOLD.sub("-", hub_name.lower()).strip("-") or "user"
    room = MAX_LEN - len(PREFIX) - len(digest) - 1
    return f"{PREFIX}{folded[:room].rstrip('-')}-{digest}"


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: str


def lookup(name: str) -> Account | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


def can_switch_users() -> bool:
    """Only a root process can run code as other accounts (multi-user mode)."""
    return os.geteuid() == 0


def ensure_account(hub_name: str, home: str | os.PathLike[str], lock_dir: str | os.PathLike[str]) -> Account:
    """The account of ``hub_name``, created on first use with ``home`` (mode 0700, owned by it).

    Idempotent and safe when the hub and the platform service create the same account at once
    (a file lock under ``lock_dir``). Needs root; raises PermissionError otherwise.
    """
    if not can_switch_users():
        raise PermissionError("creating system accounts needs root; this platform runs single-person")
    name = account_name(hub_name)
    Path(lock_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(Path(lock_dir) / "accounts.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        account = lookup(name)
        if account is None:
            subprocess.run(
                [
                    "useradd",
                    "--home-dir",
                    str(home),
                    "--no-create-home",
                    "--shell",
                    "/bin/bash",
                    "--user-group",
                    "--comment",
                    f"Yitong user {hub_name}"[:200],
                    name,
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            account = lookup(name)
            assert account is not None
    home_path = Path(home)
    home_path.mkdir(parents=True, exist_ok=True)
    st = home_path.stat()
    if (st.st_uid, st.st_gid) != (account.uid, account.gid):
        os.chown(home_path, account.uid, account.gid)
    os.chmod(home_path, 0o700)
    return Account(account.name, account.uid, account.gid, str(home_path))
