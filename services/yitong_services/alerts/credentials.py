"""The monitoring's logins: one generated password per daemon (Prometheus, Alertmanager, the node
exporter), kept under ``<data_dir>/secrets/monitoring/`` (0600), and each daemon's web config file
(``--web.config.file``: the exporter toolkit's ``basic_auth_users``, a bcrypt hash of it).

Every client of a daemon sends its login: the service (readiness, silences, reload checks),
Prometheus (its scrapes of itself, of Alertmanager and of the node exporter, and its alerts to
Alertmanager). Nothing else on the machine can read the password files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .files import secret, write_atomic

USER = "yitong"
DAEMONS = ("prometheus", "alertmanager", "node")
FILE_NAMES = {"prometheus": "prometheus", "alertmanager": "alertmanager", "node": "node-exporter"}
# bcrypt's cost: the exporter toolkit checks a login against the hash once and then caches the
# answer, so the cost is paid on a daemon's first request from each client, not on every scrape
ROUNDS = 10


@dataclass(frozen=True)
class Login:
    """A daemon's login: ``user`` and the file holding its password (Prometheus' ``password_file``)."""

    user: str
    password_file: str

    def password(self) -> str:
        return Path(self.password_file).read_text().strip()

    def basic_auth(self) -> dict[str, str]:
        """Prometheus' ``basic_auth`` block for a client of this daemon."""
        return {"username": self.user, "password_file": self.password_file}


def secret_dir(data_dir: Path) -> Path:
    return Path(data_dir).absolute() / "secrets" / "monitoring"


def logins(data_dir: Path) -> dict[str, Login]:
    """Each daemon's login (the files are made by ``ensure``)."""
    d = secret_dir(data_dir)
    return {name: Login(USER, str(d / f"{FILE_NAMES[name]}-password")) for name in DAEMONS}


def ensure(login: Login) -> str:
    """The login's password, made once (64 hex characters, written 0600 through a rename)."""
    return secret(Path(login.password_file))


def web_config(user: str, hashed: str) -> dict[str, Any]:
    """The daemon's web config file: basic auth with this one user (no TLS: loopback)."""
    return {"basic_auth_users": {user: hashed}}


def current_hash(text: str, user: str) -> str | None:
    """The hash ``text`` (a web config file) holds for ``user``, if any."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    users = data.get("basic_auth_users") if isinstance(data, dict) else None
    value = users.get(user) if isinstance(users, dict) else None
    return value if isinstance(value, str) else None


def hash_for(password: str, existing: str | None) -> str:
    """``existing`` when it is a bcrypt hash of ``password`` (the file stays as it is: each new
    hash has a new salt), else a new hash."""
    import bcrypt

    if existing:
        try:
            if bcrypt.checkpw(password.encode(), existing.encode()):
                return existing
        except ValueError:
            pass
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(ROUNDS)).decode()


def write_web_config(path: Path, login: Login) -> bool:
    """Write the daemon's web config file for ``login`` (0600); False when it is unchanged."""
    password = ensure(login)
    try:
        existing = current_hash(path.read_text(), login.user)
    except OSError:
        existing = None
    header = "# written by the Yitong platform service (alerts/credentials.py): edits here are replaced\n"
    body = yaml.safe_dump(web_config(login.user, hash_for(password, existing)), sort_keys=False)
    return write_atomic(path, header + body)
