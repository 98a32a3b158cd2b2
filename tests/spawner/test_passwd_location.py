"""`yitong-passwd` and the hub agree on the password file (issue 8: the README's step used to write
`.yitong/passwords.json` while the hub read `.yitong/secrets/passwords.json`). The end-to-end
check (the README's command verbatim, then a login through the real hub) is
tests/e2e/test_passwd_login.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from yitong_spawner import passwords
from yitong_spawner.hubconfig import hub_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "env,prefix,cwd,expected",
    [
        ({"YITONG_DATA_DIR": "/srv/yt"}, "/opt/venv", "/tmp", "/srv/yt"),
        ({"YITONG_DATA_DIR": "/srv/yt"}, str(ROOT / ".venv"), "/tmp", "/srv/yt"),
        ({}, str(ROOT / ".venv"), "/tmp", str(ROOT / ".yitong")),  # the README's .venv/bin/yitong-passwd
        ({"YITONG_DATA_DIR": ""}, str(ROOT / ".venv"), "/", str(ROOT / ".yitong")),
        ({}, "/opt/venv", "/home/a", "/home/a/.yitong"),  # installed elsewhere: like the authenticator
    ],
)
def test_default_data_dir(env, prefix, cwd, expected):
    assert passwords.default_data_dir(env, prefix, cwd) == expected


def test_hub_reads_what_the_cli_writes(tmp_path):
    cfg = hub_config({}, settings_path="s.yaml", data_dir=str(tmp_path), service_token="t")
    assert cfg["YitongAuthenticator"]["password_file"] == passwords.password_file(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "YITONG_DATA_DIR"} | {"YITONG_DATA_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "yitong_spawner.passwords", "set", "alice", "--generate"],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    password = out.stdout.strip().rsplit(": ", 1)[1]
    stored = passwords.load(cfg["YitongAuthenticator"]["password_file"])
    assert passwords.verify_password(password, stored["alice"])
    assert str(tmp_path / "secrets" / "passwords.json") in out.stderr


def test_jupyterhub_config_default_matches():
    """jupyterhub_config.py's default data dir is the checkout's .yitong: the CLI's default here."""
    text = (ROOT / "jupyterhub_config.py").read_text()
    assert 'root / ".yitong"' in text
    assert passwords.default_data_dir({}, str(ROOT / ".venv")) == str(ROOT / ".yitong")
