"""Password file for the embedded default: PBKDF2-SHA256 hashes in a JSON file (mode 0600).

Format: `{"users": {"alice": "pbkdf2_sha256$<iterations>$<salt hex>$<hash hex>"}}`. The hub's
authenticator reads it (:func:`password_file` of its data directory); `yitong-passwd`
(:mod:`yitong_spawner.passwords`) and `PUT /hub/api/yitong/passwords/{name}`
(:mod:`yitong_spawner.password_api`) write it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

ALGORITHM = "pbkdf2_sha256"
ITERATIONS = 310_000


def password_file(data_dir: str | os.PathLike) -> str:
    """Where the hub reads passwords: `<data_dir>/secrets/passwords.json`."""
    return os.path.join(os.path.abspath(data_dir), "secrets", "passwords.json")


def default_data_dir(env: Mapping[str, str] | None = None, prefix: str | None = None, cwd: str | None = None) -> str:
    """The data directory `make run` and `jupyterhub_config.py` use when nothing names one.

    `$YITONG_DATA_DIR`; else, when this runs from a checkout's `.venv` (the README's
    `.venv/bin/yitong-passwd`), that checkout's `.yitong`; else `./.yitong`.
    """
    env = os.environ if env is None else env
    if env.get("YITONG_DATA_DIR"):
        return os.path.abspath(env["YITONG_DATA_DIR"])
    checkout = Path(prefix or sys.prefix).resolve().parent
    if (checkout / "jupyterhub_config.py").is_file():
        return str(checkout / ".yitong")
    return os.path.abspath(os.path.join(cwd or os.getcwd(), ".yitong"))


def hash_password(password: str, *, iterations: int = ITERATIONS, salt: bytes | None = None) -> str:
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"{ALGORITHM}${iterations}${salt.hex()}${digest.hex()}"


def verify_password(password: str, encoded: str) -> bool:
    """Constant-time check of `password` against an encoded hash; malformed hashes never match."""
    try:
        algorithm, iterations, salt, expected = encoded.split("$")
        if algorithm != ALGORITHM:
            return False
        digest = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), int(iterations))
    except (ValueError, AttributeError):
        return False
    return hmac.compare_digest(digest.hex(), expected)


def load(path: str) -> dict[str, str]:
    """name -> encoded hash; a missing file is empty."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    users = data.get("users", {}) if isinstance(data, dict) else {}
    return {str(k): str(v) for k, v in users.items()}


def save(path: str, users: dict[str, str]) -> None:
    """Write atomically (temp file + rename in the same directory), readable by the owner only."""
    atomic_json(path, {"users": dict(sorted(users.items()))})


def atomic_json(path: str, data: object) -> None:
    """`data` as JSON at `path`, atomically (temp file + rename in the same directory), mode 0600."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, 0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + "-", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def set_password(path: str, name: str, password: str) -> None:
    users = load(path)
    users[name] = hash_password(password)
    save(path, users)


def generate_password() -> str:
    return secrets.token_urlsafe(12)


def ensure_admin(path: str, name: str) -> str | None:
    """Create `name`'s password on first start and return it (to print once); None if it exists."""
    if name in load(path):
        return None
    password = generate_password()
    set_password(path, name, password)
    return password
