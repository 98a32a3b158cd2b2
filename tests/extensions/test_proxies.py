"""jupyter-server-proxy entries: pure config functions and their entry points."""

import contextlib
import dataclasses
import fcntl
import os
import stat
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from jupyter_server_proxy.config import ServerProcess

from yitong_lab import proxies
from yitong_lab.proxies import code_server, code_server_launch, tensorboard, tensorboard_socket


def render(command, **args):
    """What jupyter-server-proxy does to each command item."""
    return [item.format(**args) for item in command]


def test_code_server(monkeypatch, tmp_path):
    prefix = tmp_path / "tools" / "code-server"
    monkeypatch.setenv("YITONG_CODE_SERVER_WORKDIR", str(tmp_path / "{odd}"))
    monkeypatch.setenv("YITONG_CODE_SERVER_PREFIX", str(prefix))
    monkeypatch.setattr(code_server.shutil, "which", lambda name: f"/opt/bin/{name}")
    config = code_server.setup_code_server()
    # always the launcher on this Python: it execs code-server, or serves its install's progress
    assert render(config["command"], unix_socket="/tmp/yt-web-x/code-server.sock") == [
        sys.executable,
        "-m",
        "yitong_lab.proxies.code_server_launch",
        "--socket",
        "/tmp/yt-web-x/code-server.sock",
        "--prefix",
        str(prefix),
        str(tmp_path / "{odd}"),
    ]
    assert config["launcher_entry"]["enabled"] is True
    assert config["launcher_entry"]["title"] == "VS Code"
    assert "absolute_url" not in config
    assert_private_socket(config["unix_socket"], "code-server")
    assert Path(config["launcher_entry"]["icon_path"]).read_text().startswith("<svg")


def assert_private_socket(path: str, name: str) -> None:
    """The entry's socket is in this process's folder, 0700 and its own, whose path fits a socket."""
    folder = Path(path).parent
    assert Path(path).name == f"{name}.sock" and len(path) < 108
    info = folder.stat()
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
    assert folder == proxies.private_dir()


def test_code_server_command():
    # a socket only its account opens; no port, and none of code-server's own port proxying
    assert code_server.code_server_command("/t/bin/code-server", "/home/alice", "/tmp/s/cs.sock") == [
        "/t/bin/code-server",
        "--auth",
        "none",
        "--socket",
        "/tmp/s/cs.sock",
        "--socket-mode",
        "600",
        "--disable-proxy",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "/home/alice",
    ]


def test_code_server_absent_disables_launcher(monkeypatch, tmp_path):
    monkeypatch.setenv("YITONG_CODE_SERVER_PREFIX", str(tmp_path / "code-server"))
    monkeypatch.setattr(code_server.shutil, "which", lambda name: None)
    config = code_server.setup_code_server()
    assert config["launcher_entry"]["enabled"] is False
    assert config["command"][:3] == [sys.executable, "-m", "yitong_lab.proxies.code_server_launch"]


def fake_install(prefix: Path, state: str) -> None:
    """The files scripts/install-code-server.sh leaves in each state (the lock is taken by the test)."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    if state == "installed":
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / "code-server").write_text("#!/bin/sh\n")
        (prefix / "bin" / "code-server").chmod(0o755)
    elif state in ("installing", "interrupted"):
        (Path(f"{prefix}.partial") / "lib").mkdir(parents=True)
        with open(Path(f"{prefix}.partial") / "lib" / "blob", "wb") as blob:
            blob.truncate(code_server.INSTALLED_BYTES * 2 // 5)  # sparse: its size, no disk
        Path(f"{prefix}.lock").touch()
    elif state == "failed":
        # as scripts/install-code-server.sh writes it: why (the build's own line), then the log
        Path(f"{prefix}.failed").write_text(f"{FAILED.detail}\nlog: {FAILED.log}\n")


FAILED = code_server.InstallState(
    "failed", detail="x.h:6:10: fatal error: gssapi/gssapi.h: No such file or directory (exit 1)", log="/t/cs.log"
)


@pytest.mark.parametrize(
    ("files", "locked", "expected", "card"),
    [
        ("installed", False, code_server.InstallState("installed", "PREFIX/bin/code-server"), True),
        ("installing", True, code_server.InstallState("installing", percent=40), True),
        ("interrupted", False, code_server.InstallState("absent"), False),  # a partial nobody writes
        ("failed", False, FAILED, True),  # the card stays: its page says why
        ("nothing", False, code_server.InstallState("absent"), False),
    ],
)
def test_install_state(monkeypatch, tmp_path, files, locked, expected, card):
    prefix = tmp_path / "tools" / "code-server"
    fake_install(prefix, files)
    monkeypatch.setenv("YITONG_CODE_SERVER_PREFIX", str(prefix))
    monkeypatch.setattr(code_server.shutil, "which", lambda name: None)
    with open(f"{prefix}.lock", "a") if locked else contextlib.nullcontext() as lock:
        if lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # as the install script's flock does
        state = code_server.install_state(prefix, on_path="")
        entry = code_server.setup_code_server()["launcher_entry"]
    if expected.executable:
        expected = dataclasses.replace(expected, executable=expected.executable.replace("PREFIX", str(prefix)))
    assert state == expected
    # never a figure in the card: jupyter-server-proxy reads it once, so it would go stale
    assert (entry["title"], entry["enabled"]) == ("VS Code", card)


def test_install_state_falls_back_to_path(tmp_path):
    state = code_server.install_state(tmp_path / "none", on_path="/usr/bin/code-server")
    assert state == code_server.InstallState("installed", "/usr/bin/code-server")


def test_tensorboard(monkeypatch, tmp_path):
    monkeypatch.setattr(tensorboard, "installed", lambda: True)
    monkeypatch.setenv("YITONG_TB_LOGDIR", str(tmp_path))
    config = tensorboard.setup_tensorboard()
    assert render(config["command"], unix_socket="/tmp/s/tb.sock", base_url="/user/alice/") == [
        sys.executable,
        "-m",
        "yitong_lab.proxies.tensorboard_socket",
        "--socket",
        "/tmp/s/tb.sock",
        "--logdir",
        str(tmp_path),
        "--path_prefix",
        "/user/alice/tensorboard",
        "--reload_interval",
        "15",
    ]
    assert_private_socket(config["unix_socket"], "tensorboard")
    assert config["absolute_url"] is True
    assert config["launcher_entry"]["enabled"] is True
    assert config["launcher_entry"]["path_info"] == "tensorboard/"


def test_tensorboard_defaults(monkeypatch):
    monkeypatch.delenv("YITONG_TB_LOGDIR", raising=False)
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setattr(tensorboard, "installed", lambda: True)
    command = tensorboard.setup_tensorboard()["command"]
    assert command[command.index("--logdir") + 1] == "/home/alice"


def test_tensorboard_absent(monkeypatch):
    monkeypatch.setattr(tensorboard, "installed", lambda: False)
    config = tensorboard.setup_tensorboard()
    assert render(config["command"], unix_socket="/tmp/s/tb.sock") == [
        sys.executable,
        "-m",
        "yitong_lab.proxies.absent",
        "--socket",
        "/tmp/s/tb.sock",
        tensorboard.NOT_INSTALLED,
    ]
    assert_private_socket(config["unix_socket"], "tensorboard")
    assert config["launcher_entry"]["enabled"] is False


@pytest.mark.parametrize("name", ["code-server", "tensorboard"])
def test_entry_points_resolve(name):
    (entry,) = [ep for ep in entry_points(group="jupyter_serverproxy_servers") if ep.name == name]
    process = ServerProcess(name=name, **entry.load()())  # as jupyter-server-proxy does
    # "VS Code (installing, 40%)" while `make run`'s background install is under way
    assert process.launcher_entry.title.split(" (installing")[0] in ("VS Code", "TensorBoard")
    assert process.launcher_entry.path_info == f"{name}/"
    assert process.unix_socket == proxies.socket_path(name)  # never a TCP port


def test_code_server_keeps_this_servers_environment():
    # VSCODE_CLI=1: VS Code does not swap in a login shell's environment (its /etc/profile PATH)
    env = code_server_launch.code_server_env({"PATH": "/venv/bin:/usr/bin", "HOME": "/home/alice"})
    assert env == {"PATH": "/venv/bin:/usr/bin", "HOME": "/home/alice", "VSCODE_CLI": "1"}


def test_tensorboard_socket_argv():
    # the fast loader's data server would listen on a localhost port: always off, and last, so it wins
    assert tensorboard_socket.tensorboard_argv(["--logdir", "/x", "--load_fast", "true"]) == [
        "tensorboard",
        "--logdir",
        "/x",
        "--load_fast",
        "true",
        "--load_fast=false",
    ]
