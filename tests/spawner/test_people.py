"""Adding a person (`yitong-passwd add`, issue 30): which platform the command is about (the hub
running from this checkout, read from /proc), the name rules (JupyterHub's), and people added
while the hub is stopped becoming users and group members at its start (jupyterhub_config.py
loaded as the hub loads it). The running-hub path (REST calls to a real hub) and the README's
commands verbatim are tests/e2e/test_passwd_login.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from yitong_spawner import people, running
from yitong_spawner.passwords import load, main, verify_password

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = "/src/yitong"
HUB = ["/src/yitong/.venv/bin/python", "/src/yitong/.venv/bin/jupyterhub", "-f"]


def proc(pid, argv, cwd="/", **env):
    return running.Process(pid, argv, cwd, env)


@pytest.mark.parametrize(
    "process, expected",
    [
        # make run DATA_DIR=/srv/yt: relative config, the checkout as cwd
        (proc(1, [*HUB, "jupyterhub_config.py"], CHECKOUT, YITONG_DATA_DIR="/srv/yt"), "/srv/yt"),
        # tests/stack.py: absolute config, elsewhere
        (proc(2, [*HUB, f"{CHECKOUT}/jupyterhub_config.py"], "/tmp/w", YITONG_DATA_DIR="data"), "/tmp/w/data"),
        (proc(3, [*HUB, f"{CHECKOUT}/jupyterhub_config.py"]), f"{CHECKOUT}/.yitong"),  # the default
        (proc(4, ["/usr/bin/jupyterhub", "--config", f"{CHECKOUT}/jupyterhub_config.py"]), f"{CHECKOUT}/.yitong"),
        (proc(5, [*HUB, "/other/jupyterhub_config.py"], YITONG_DATA_DIR="/srv/b"), None),  # another checkout
        (proc(6, ["/usr/bin/python3", "-m", "yitong_services.core.supervise", "--data-dir", "/srv/yt"]), None),
        (proc(7, ["/src/yitong/.venv/bin/jupyterhub-singleuser", "-f", "jupyterhub_config.py"], CHECKOUT), None),
    ],
)
def test_hub_of(process, expected):
    hub = running.hub_of(process, CHECKOUT)
    assert (hub.data_dir if hub else None) == expected


def hub(pid, data_dir):
    return running.Hub(pid, data_dir, f"{data_dir}/s.yaml")


@pytest.mark.parametrize(
    "env, hubs, expected",
    [
        ({}, [], (f"{CHECKOUT}/.yitong", None)),
        ({}, [hub(1, "/srv/a")], ("/srv/a", hub(1, "/srv/a"))),
        ({"YITONG_DATA_DIR": "/srv/b"}, [hub(1, "/srv/a"), hub(2, "/srv/b")], ("/srv/b", hub(2, "/srv/b"))),
        ({"YITONG_DATA_DIR": "/srv/c"}, [hub(1, "/srv/a")], ("/srv/c", None)),
        ({"YITONG_DATA_DIR": ""}, [hub(1, "/srv/a")], ("/srv/a", hub(1, "/srv/a"))),
    ],
)
def test_choose(env, hubs, expected):
    assert running.choose(env, hubs, CHECKOUT) == expected


def test_another_accounts_hub_is_not_guessed():
    """Its environment unreadable: refused without YITONG_DATA_DIR, never the checkout's .yitong."""
    theirs = running.hub_of(running.Process(9, [*HUB, f"{CHECKOUT}/jupyterhub_config.py"], "", None), CHECKOUT)
    assert theirs == running.Hub(9, "", "")
    with pytest.raises(running.Ambiguous, match=r"as another account \(pid 9\): run this as that account"):
        running.choose({}, [theirs], CHECKOUT)
    assert running.choose({"YITONG_DATA_DIR": "/srv/a"}, [theirs], CHECKOUT) == ("/srv/a", None)


def test_choose_refuses_two_platforms():
    with pytest.raises(running.Ambiguous) as e:
        running.choose({}, [hub(1, "/srv/a"), hub(2, "/srv/b")], CHECKOUT)
    assert str(e.value) == (
        "2 platforms run from this checkout (/srv/a, /srv/b): name one with YITONG_DATA_DIR=<data dir> before the command"
    )


def test_scan_finds_a_real_process(tmp_path):
    """/proc as it is: a process that looks like `make run`'s hub is found with its data directory."""
    fake = tmp_path / "jupyterhub"
    fake.write_text("import time; time.sleep(60)\n")
    env = {"PATH": os.defpath, "YITONG_DATA_DIR": str(tmp_path / "d")}
    p = subprocess.Popen([sys.executable, str(fake), "-f", "jupyterhub_config.py"], cwd=tmp_path, env=env)
    try:
        for _ in range(50):  # until its environment is readable (after exec)
            found = [h for h in running.hubs_of(running.scan(), str(tmp_path)) if h.pid == p.pid]
            if found:
                break
            subprocess.run(["sleep", "0.1"])
        assert found == [running.Hub(p.pid, str(tmp_path / "d"), str(tmp_path / "yitong.example.yaml"))]
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize(
    "name, expected",
    [("alice", "alice"), ("Alice", "alice"), ("bob.smith", "bob.smith"), ("a@example.org", "a@example.org")],
)
def test_names_as_jupyterhub_normalises_them(name, expected):
    assert people.normalize_name(name) == expected


@pytest.mark.parametrize("name", ["", "a/b", "..", " alice"])
def test_names_jupyterhub_refuses(name):
    with pytest.raises(people.Refused, match="is not a valid JupyterHub user name"):
        people.normalize_name(name)


def test_merge_pending():
    cfg = {
        "JupyterHub": {"load_groups": {"everyone": {"users": ["admin"]}}},
        "Authenticator": {"admin_users": {"admin"}, "allow_all": True},
    }
    people.merge_pending(cfg, {"alice": ["everyone", "nlp"], "bob": []})
    assert cfg["JupyterHub"]["load_groups"] == {"everyone": {"users": ["admin", "alice"]}, "nlp": {"users": ["alice"]}}
    assert cfg["Authenticator"]["allowed_users"] == {"alice", "bob"}
    assert cfg["Authenticator"]["allow_all"] is True


@pytest.fixture
def stopped(tmp_path, monkeypatch):
    """A platform that is not running: its data directory and settings file (two VCs)."""
    settings = yaml.safe_load((ROOT / "yitong.example.yaml").read_text())
    settings["vcs"]["nlp"] = {**json.loads(json.dumps(settings["vcs"]["default"])), "groups": ["nlp-team", "other"]}
    path = tmp_path / "yitong.yaml"
    path.write_text(yaml.safe_dump(settings))
    monkeypatch.setenv("YITONG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("YITONG_SETTINGS", str(path))
    return tmp_path


def test_add_while_stopped_then_the_hub_starts(stopped, capsys):
    """The person is recorded; jupyterhub_config.py (as the hub loads it) makes them a user and a
    member of their VCs' groups, once."""
    assert main(["add", "Alice", "--generate", "--vc", "default", "--vc", "nlp", "--group", "extra"]) == 0
    out, err = capsys.readouterr()
    password = out.split("Password for alice: ", 1)[1].split()[0]
    data = stopped / "data"
    assert verify_password(password, load(str(data / "secrets" / "passwords.json"))["alice"])
    assert (
        "alice becomes a hub user at the hub's next start (it is not running), in groups extra, everyone, nlp-team"
        in err
    )
    pending = data / "secrets" / "people-pending.json"
    assert json.loads(pending.read_text()) == {"people": {"alice": ["everyone", "extra", "nlp-team"]}}
    assert oct(pending.stat().st_mode & 0o777) == "0o600"

    show = (
        f"from traitlets.config.loader import PyFileConfigLoader as L; c = L('jupyterhub_config.py', path={str(ROOT)!r})"
        ".load_config(); print(sorted(c.Authenticator.allowed_users)); "
        "print({g: v['users'] for g, v in sorted(c.JupyterHub.load_groups.items())})"
    )
    env = {**os.environ, "YITONG_DATA_DIR": str(data), "YITONG_SETTINGS": os.environ["YITONG_SETTINGS"]}
    first = subprocess.run([sys.executable, "-c", show], env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "['alice']",
        "{'everyone': ['admin', 'alice'], 'extra': ['alice'], 'nlp-team': ['alice']}",
    ]
    assert not pending.exists() and (data / "secrets" / "people-pending.json.taken").exists()
    again = subprocess.run([sys.executable, "-c", show], env=env, capture_output=True, text=True, timeout=60)
    assert again.stdout.splitlines()[1] == "{'everyone': ['admin']}", "taken once: a later start re-adds nobody"


@pytest.mark.parametrize(
    "args, sentence",
    [
        (["add", "a/b", "--generate"], "'a/b' is not a valid JupyterHub user name"),
        (["add", "alice", "--generate", "--vc", "vision"], "there is no VC vision in the settings file"),
    ],
)
def test_add_refusals_change_nothing(stopped, capsys, args, sentence):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert sentence in err and err.rstrip().endswith("nothing changed.")
    assert not (stopped / "data" / "secrets").exists()


def test_add_refused_with_an_identity_provider(stopped, capsys):
    settings = yaml.safe_load(Path(os.environ["YITONG_SETTINGS"]).read_text())
    settings.pop("groups")
    settings["auth"] = {
        "kind": "generic",
        "client_id": "y",
        "client_secret": "s",
        "authorize_url": "https://sso/a",
        "token_url": "https://sso/t",
        "userdata_url": "https://sso/u",
        "allow_all": True,
    }
    Path(os.environ["YITONG_SETTINGS"]).write_text(yaml.safe_dump(settings))
    assert main(["add", "alice", "--generate"]) == 2
    assert "logins come from an identity provider here (auth.kind: generic" in capsys.readouterr().err
