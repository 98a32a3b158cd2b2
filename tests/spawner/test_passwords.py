"""Password file, CLI and YitongAuthenticator."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from yitong_spawner import passwords
from yitong_spawner.authenticator import YitongAuthenticator


def test_hash_format_and_verify():
    encoded = passwords.hash_password("correct horse")
    algorithm, iterations, salt, digest = encoded.split("$")
    assert algorithm == "pbkdf2_sha256" and int(iterations) >= 200_000 and len(salt) == 32
    assert passwords.verify_password("correct horse", encoded)
    assert encoded != passwords.hash_password("correct horse")  # per-user random salt


@pytest.mark.parametrize("encoded", ["", "garbage", "md5$1$00$00", "pbkdf2_sha256$x$zz$00", None])
def test_malformed_hashes_never_match(encoded):
    assert passwords.verify_password("anything", encoded) is False


def test_file_is_private_and_atomic(tmp_path):
    path = str(tmp_path / "d" / "passwords.json")
    passwords.set_password(path, "alice", "secret-1")
    passwords.set_password(path, "bob", "secret-2")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(json.load(open(path))["users"]) == ["alice", "bob"]
    assert [f for f in os.listdir(tmp_path / "d") if f.startswith(".passwords-")] == []


def test_ensure_admin_only_once(tmp_path):
    path = str(tmp_path / "passwords.json")
    first = passwords.ensure_admin(path, "admin")
    assert first and passwords.verify_password(first, passwords.load(path)["admin"])
    assert passwords.ensure_admin(path, "admin") is None


def test_cli_generate_prints_once(tmp_path):
    path = str(tmp_path / "p.json")
    out = subprocess.run(
        [sys.executable, "-m", "yitong_spawner.passwords", "set", "carol", "--generate", "--file", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    password = out.strip().rsplit(": ", 1)[1]
    assert passwords.verify_password(password, passwords.load(path)["carol"])
    out = subprocess.run(
        [sys.executable, "-m", "yitong_spawner.passwords", "set", "carol", "--file", path],
        input="another-secret\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "another-secret" not in out
    assert passwords.verify_password("another-secret", passwords.load(path)["carol"])


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"username": "alice", "password": "right-password"}, "alice"),
        ({"username": "alice", "password": "wrong"}, None),
        ({"username": "mallory", "password": "right-password"}, None),
        ({"username": "alice", "password": ""}, None),
        ({}, None),
    ],
)
async def test_authenticator(tmp_path, data, expected):
    path = str(tmp_path / "passwords.json")
    passwords.set_password(path, "alice", "right-password")
    auth = YitongAuthenticator(password_file=path)
    assert await auth.authenticate(None, data) == expected


def test_authenticator_default_file(tmp_path):
    # the file the hub config names and `yitong-passwd` writes (issue 8: they used to differ)
    assert YitongAuthenticator(data_dir=str(tmp_path)).password_file == str(tmp_path / "secrets" / "passwords.json")
