"""Fresh OpenSSH key pairs for the SSH tests (made with ``cryptography``, as ssh-keygen would)."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa


def public_line(kind: str = "ed25519", bits: int = 2048, comment: str = "test@yitong") -> str:
    key = {
        "ed25519": lambda: ed25519.Ed25519PrivateKey.generate(),
        "ecdsa": lambda: ec.generate_private_key(ec.SECP256R1()),
        "rsa": lambda: rsa.generate_private_key(65537, bits),
    }[kind]()
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return f"{pub.decode()} {comment}"


def key_pair(directory: Path, name: str = "id_ed25519") -> tuple[Path, str]:
    """A private key file (0600, OpenSSH format) and its public line."""
    key = ed25519.Ed25519PrivateKey.generate()
    path = Path(directory) / name
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return path, f"{pub.decode()} {name}"
