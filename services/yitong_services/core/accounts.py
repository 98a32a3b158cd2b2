"""System accounts for people: the one mapping from a hub user name to a Unix account.

User code (notebooks, terminals, jobs) never runs as root nor as the account that holds the
platform's secrets. On a multi-user machine every hub user maps to a system account
``yt<tag>-<name>`` (``account_name``), created on first use (``ensure_account``) with its home
under the data directory, the way JupyterHub's LocalProcessSpawner maps users to system accounts,
but with a prefix so that a hub user called ``root`` or ``daemon`` can never become that account.

``<tag>`` names the platform instance (``service.account_tag``; by default 4 hex digits of the
data directory's real path, :func:`instance_tag`), so two platforms on one host never share a
person's account: ``alice`` is ``yt3fa2-alice`` on one and ``yt91c0-alice`` on the other. An
account of the name that exists with another home belongs to another platform and is refused
with a sentence, never taken over. Deprecated but kept: an install from before the tag has
``yt-<name>`` accounts; one whose home is this platform's stays in use.

Names that are not valid Unix names as they are (upper case, dots, ``@``, longer than 32
characters) are folded to ``[a-z0-9_-]`` and get a short hash of the hub name, so two hub users
never share an account: ``Alice.Smith@corp`` -> ``yt3fa2-alice-smith-corp-5d41a3``.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import pwd
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

PREFIX = "yt-"  # the untagged (pre-tag) form: ``account_name(name)``
MAX_LEN = 32  # useradd's limit on Linux
TAG = re.compile(r"^[a-z0-9]{1,6}$")
_VALID = re.compile(r"^[a-z_][a-z0-9_-]*$")
_FOLD = re.compile(r"[^a-z0-9_-]+")
log = logging.getLogger(__name__)


class AccountClash(PermissionError):
    """An account of this platform's name exists and belongs to another (a sentence)."""


def instance_tag(data_dir: str | os.PathLike[str]) -> str:
    """The default tag of the platform whose data directory is ``data_dir`` (pure: give it the
    real path): 4 hex digits of its hash, the same for every start from that directory."""
    return hashlib.blake2s(os.fspath(data_dir).encode(), digest_size=2).hexdigest()


def account_name(hub_name: str, tag: str = "") -> str:
    """The Unix account of hub user ``hub_name`` on the platform tagged ``tag`` (pure; stable
    across releases). ``tag`` empty: the untagged ``yt-<name>`` of installs before tags."""
    if tag and not TAG.match(tag):
        raise ValueError(f"an account tag is 1 to 6 of a-z and 0-9, not {tag!r}")
    prefix = f"yt{tag}-"
    candidate = prefix + hub_name
    if _VALID.match(hub_name.lower()) and hub_name == hub_name.lower() and len(candidate) <= MAX_LEN:
        return candidate
    digest = hashlib.blake2s(hub_name.encode(), digest_size=3).hexdigest()
    folded = _FOLD.sub("-", hub_name.lower()).strip("-") or "user"
    room = MAX_LEN - len(prefix) - len(digest) - 1
    return f"{prefix}{folded[:room].rstrip('-')}-{digest}"


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


def ensure_account(
    hub_name: str, home: str | os.PathLike[str], lock_dir: str | os.PathLike[str], tag: str = ""
) -> Account:
    """The account of ``hub_name`` on the platform tagged ``tag``, created on first use with
    ``home`` (mode 0700, owned by it).

    Idempotent and safe when the hub and the platform service create the same account at once
    (a file lock under ``lock_dir``). An untagged ``yt-<name>`` whose home is ``home`` (made
    before tags) is used as it is. Needs root; raises PermissionError otherwise, and
    AccountClash when the account exists with another home (another platform's).
    """
    if not can_switch_users():
        raise PermissionError("creating system accounts needs root; this platform runs single-person")
    name = account_name(hub_name, tag)
    Path(lock_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(Path(lock_dir) / "accounts.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        account = lookup(name)
        legacy = lookup(account_name(hub_name)) if tag else None
        if account is None and legacy is not None and os.path.abspath(legacy.home) == os.path.abspath(home):
            log.warning(
                "%s uses the untagged account %s (made before account tags); new people get %s-style names",
                hub_name,
                legacy.name,
                f"yt{tag}-",
            )
            account = legacy
        elif account is not None and os.path.abspath(account.home) != os.path.abspath(home):
            raise AccountClash(
                f"the system account {name} exists with the home {account.home}, not this platform's {home}: "
                "it belongs to another platform on this host; give this one its own service.account_tag"
            )
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
