"""People's SSH public keys: parsing (pure) and the table's reads and writes.

Only OpenSSH public key lines are accepted (``<algorithm> <base64> [comment]``, what an
``id_*.pub`` file holds): ed25519, ECDSA (P-256/384/521) and RSA of 2048 bits or more. The
fingerprint is ``SHA256:<base64 without padding>`` of the key blob, as ``ssh-keygen -lf`` prints
it; a person holds a key once, and at most ``ssh.max_keys`` keys.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..core.errors import Refusal
from .models import SSHKey
from .schemas import MAX_KEY_CHARS

ALGORITHMS = {
    "ssh-ed25519": "ed25519",
    "ecdsa-sha2-nistp256": "ecdsa",
    "ecdsa-sha2-nistp384": "ecdsa",
    "ecdsa-sha2-nistp521": "ecdsa",
    "ssh-rsa": "rsa",
}
MIN_RSA_BITS = 2048
_PRINTABLE = re.compile(r"[^\x20-\x7e]")


class KeyRefused(ValueError):
    """A public key that is refused; the message is a sentence for the person."""


@dataclass(frozen=True)
class ParsedKey:
    algorithm: str
    blob: bytes
    bits: int
    comment: str

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.blob)

    @property
    def line(self) -> str:
        """``<algorithm> <base64>``: the key without its comment."""
        return f"{self.algorithm} {base64.b64encode(self.blob).decode()}"


def fingerprint(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _first_string(blob: bytes) -> bytes:
    if len(blob) < 4:
        raise KeyRefused("the key data is too short to be an SSH public key")
    (n,) = struct.unpack(">I", blob[:4])
    return blob[4 : 4 + n]


def parse_public_key(text: str) -> ParsedKey:
    """One OpenSSH public key line -> :class:`ParsedKey`; :class:`KeyRefused` with a sentence otherwise."""
    text = text.strip()
    if not text:
        raise KeyRefused("the key is empty: paste the contents of your id_ed25519.pub (or id_rsa.pub)")
    if len(text) > MAX_KEY_CHARS:
        raise KeyRefused(f"the key is longer than {MAX_KEY_CHARS} characters")
    if "PRIVATE KEY" in text:
        raise KeyRefused("this is a private key: never share it; paste the .pub file instead")
    if "\n" in text or "\r" in text:
        raise KeyRefused("send one public key, on one line")
    parts = text.split(None, 2)
    algorithm = parts[0]
    if algorithm not in ALGORITHMS:
        raise KeyRefused(
            f"{algorithm[:40]!r} keys are not accepted: use an OpenSSH ed25519, ecdsa or rsa"
            f" ({MIN_RSA_BITS} bits or more) public key, e.g. `ssh-keygen -t ed25519`"
        )
    if len(parts) < 2:
        raise KeyRefused(f"the {algorithm} key has no key data after its type")
    try:
        blob = binascii.a2b_base64(parts[1].encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        raise KeyRefused("the key data is not valid base64") from None
    if _first_string(blob) != algorithm.encode():
        raise KeyRefused(f"the key data is not a {algorithm} key")
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    try:
        key = load_ssh_public_key(f"{algorithm} {parts[1]}".encode())
    except (ValueError, TypeError) as e:
        raise KeyRefused(f"the {algorithm} key cannot be read: {str(e)[:100]}") from None
    if isinstance(key, rsa.RSAPublicKey):
        bits = key.key_size
        if bits < MIN_RSA_BITS:
            raise KeyRefused(f"RSA keys need {MIN_RSA_BITS} bits or more; this one has {bits}")
    elif isinstance(key, ec.EllipticCurvePublicKey):
        bits = key.curve.key_size
    else:
        bits = 256
    comment = _PRINTABLE.sub("", parts[2]).strip()[:255] if len(parts) > 2 else ""
    return ParsedKey(algorithm, blob, bits, comment)


def as_dict(row: SSHKey) -> dict:
    return {
        "id": row.id,
        "algorithm": row.algorithm,
        "bits": row.bits,
        "fingerprint": row.fingerprint,
        "comment": row.comment,
        "created": row.created,
    }


def list_keys(session: Session, user: str) -> list[SSHKey]:
    return list(session.scalars(select(SSHKey).where(SSHKey.user == user).order_by(SSHKey.id)))


def add_key(session: Session, user: str, text: str, max_keys: int) -> SSHKey:
    """Store ``text`` as a key of ``user`` (inside a write transaction)."""
    try:
        parsed = parse_public_key(text)
    except KeyRefused as e:
        raise Refusal(422, str(e)) from None
    count = session.scalar(select(func.count()).select_from(SSHKey).where(SSHKey.user == user)) or 0
    same = session.scalar(select(SSHKey).where(SSHKey.user == user, SSHKey.fingerprint == parsed.fingerprint))
    if same is not None:
        raise Refusal(409, f"you already added this key ({parsed.fingerprint}) as key {same.id}")
    if count >= max_keys:
        raise Refusal(409, f"you have {count} SSH keys, the most one person may hold (ssh.max_keys); remove one first")
    row = SSHKey(
        user=user,
        algorithm=parsed.algorithm,
        bits=parsed.bits,
        fingerprint=parsed.fingerprint,
        public_key=parsed.line,
        comment=parsed.comment,
    )
    session.add(row)
    session.flush()
    return row


def remove_key(session: Session, user: str, key_id: int) -> None:
    row = session.get(SSHKey, key_id)
    if row is None or row.user != user:
        raise Refusal(404, f"you have no SSH key {key_id}")
    session.delete(row)


def fingerprints_of(session: Session, user: str) -> set[str]:
    """What the gateway accepts for login name ``user``."""
    return set(session.scalars(select(SSHKey.fingerprint).where(SSHKey.user == user)))
