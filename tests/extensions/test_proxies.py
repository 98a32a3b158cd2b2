"""jupyter-server-proxy entries: pure config functions and their entry points."""

from importlib.metadata import entry_points
from pathlib import Path

import pytest
from jupyter_server_proxy.config import ServerProcess

from yitong_lab.proxies import code_server, tensorboard


def render(command, **args):
    """What jupyter-server-proxy does to each command item."""
    return [item.format(**args) for item in command]


def test_code_server(monkeypatch, tmp_path):
    monkeypatch.setattr(code_server.shutil, "which", lambda name: f"/opt/bin/{name}")
    monkeypatch.setenv("YITONG_CODE_SERVER_WORKDIR", str(tmp_path / "{odd}"))
    config = code_server.setup_code_server()
    assert render(config["command"], port=4321) == [
        "/opt/bin/code-server",
        "--auth",
        "none",
        "--bind-addr",
        "127.0.0.1:4321",
        "--disable-telemetry",
        "--disable-update-check",
        str(tmp_path / "{odd}"),
    ]
    assert config["launcher_entry"]["enabled"] is True
    assert "absolute_url" not in config
    assert Path(config["launcher_entry"]["icon_path"]).read_text().startswith("<svg")


def test_code_server_absent_disables_launcher(monkeypatch):
    monkeypatch.setattr(code_server.shutil, "which", lambda name: None)
    config = code_server.setup_code_server()
    assert config["launcher_entry"]["enabled"] is False
    assert config["command"][0] == "code-server"


def test_tensorboard(monkeypatch, tmp_path):
    monkeypatch.setattr(tensorboard.shutil, "which", lambda name: f"/opt/bin/{name}")
    monkeypatch.setenv("YITONG_TB_LOGDIR", str(tmp_path))
    config = tensorboard.setup_tensorboard()
    assert render(config["command"], port=6006, base_url="/user/alice/") == [
        "/opt/bin/tensorboard",
        "--logdir",
        str(tmp_path),
        "--port",
        "6006",
        "--host",
        "127.0.0.1",
        "--path_prefix",
        "/user/alice/tensorboard",
        "--reload_interval",
        "15",
    ]
    assert config["absolute_url"] is True
    assert config["launcher_entry"]["enabled"] is True
    assert config["launcher_entry"]["path_info"] == "tensorboard/"


def test_tensorboard_defaults(monkeypatch):
    monkeypatch.delenv("YITONG_TB_LOGDIR", raising=False)
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setattr(tensorboard.shutil, "which", lambda name: None)
    config = tensorboard.setup_tensorboard()
    assert config["command"][1:3] == ["--logdir", "/home/alice"]
    assert config["launcher_entry"]["enabled"] is False


@pytest.mark.parametrize("name", ["code-server", "tensorboard"])
def test_entry_points_resolve(name):
    (entry,) = [ep for ep in entry_points(group="jupyter_serverproxy_servers") if ep.name == name]
    process = ServerProcess(name=name, **entry.load()())  # as jupyter-server-proxy does
    assert process.launcher_entry.title in ("VS Code", "TensorBoard")
    assert process.launcher_entry.path_info == f"{name}/"
