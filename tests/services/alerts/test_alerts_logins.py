"""The monitoring's logins and listeners, pure parts: the web config files (checked by
``promtool check web-config``), prometheus.yml with each daemon's login (``promtool check
config``), the /proc/net/tcp parser, the console's monitoring line. The daemons themselves,
attacked from another account: test_alerts_locked.py."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import bcrypt
import pytest
import yaml
from helpers import require

from yitong_services.alerts import credentials, listeners
from yitong_services.alerts.config import Logins, Paths, Targets, prometheus_config
from yitong_services.ops.console import monitoring

TARGETS = Targets("127.0.0.1:8010", "/services/yitong/metrics", "127.0.0.1:9090", "127.0.0.1:9093")


def _logins(d: str = "/d/secrets/monitoring") -> Logins:
    def login(name: str) -> dict[str, str]:
        return {"username": "yitong", "password_file": f"{d}/{name}-password"}

    return Logins(login("prometheus"), login("alertmanager"), login("node-exporter"))


def test_each_daemon_is_scraped_with_its_login_and_further_nodes_without():
    targets = Targets(
        TARGETS.platform, TARGETS.metrics_path, TARGETS.prometheus, TARGETS.alertmanager, ("n1:9100",), "127.0.0.1:9100"
    )
    paths = Paths(rules="/d/alerts/rules.yml", scrape_token="/d/alerts/scrape-token", webhook_secret="/d/alerts/ws")
    config = prometheus_config(targets, paths, 15, 15, _logins())
    auth = lambda name: {"username": "yitong", "password_file": f"/d/secrets/monitoring/{name}-password"}  # noqa: E731
    assert config["alerting"] == {
        "alertmanagers": [{"basic_auth": auth("alertmanager"), "static_configs": [{"targets": ["127.0.0.1:9093"]}]}]
    }
    assert config["scrape_configs"] == [
        {
            "job_name": "yitong",
            "metrics_path": "/services/yitong/metrics",
            "authorization": {"type": "Bearer", "credentials_file": "/d/alerts/scrape-token"},
            "static_configs": [{"targets": ["127.0.0.1:8010"]}],
        },
        {
            "job_name": "prometheus",
            "basic_auth": auth("prometheus"),
            "static_configs": [{"targets": ["127.0.0.1:9090"]}],
        },
        {
            "job_name": "alertmanager",
            "basic_auth": auth("alertmanager"),
            "static_configs": [{"targets": ["127.0.0.1:9093"]}],
        },
        {"job_name": "node", "basic_auth": auth("node-exporter"), "static_configs": [{"targets": ["127.0.0.1:9100"]}]},
        {"job_name": "node-targets", "static_configs": [{"targets": ["n1:9100"], "labels": {"job": "node"}}]},
    ]
    # without logins (the Helm chart's comparison): one node job, no basic_auth anywhere
    plain = prometheus_config(targets, paths, 15, 15)
    assert "basic_auth" not in str(plain)
    assert plain["scrape_configs"][-1] == {
        "job_name": "node",
        "static_configs": [{"targets": ["127.0.0.1:9100", "n1:9100"]}],
    }


def test_promtool_checks_the_config_and_the_web_config(tmp_path):
    promtool = shutil.which("promtool")
    require("promtool", promtool is not None, "install the Debian package prometheus")
    logins = credentials.logins(tmp_path)
    for name, login in logins.items():
        web = tmp_path / f"{name}-web.yml"
        assert credentials.write_web_config(web, login) is True
        done = subprocess.run([promtool, "check", "web-config", str(web)], capture_output=True, text=True)
        assert done.returncode == 0 and "SUCCESS" in done.stdout + done.stderr, done.stdout + done.stderr
    (tmp_path / "token").write_text("t")
    (tmp_path / "rules.yml").write_text("groups: []\n")
    paths = Paths(rules=str(tmp_path / "rules.yml"), scrape_token=str(tmp_path / "token"), webhook_secret="")
    own = Logins(**{name: login.basic_auth() for name, login in logins.items()})
    targets = Targets(TARGETS.platform, TARGETS.metrics_path, TARGETS.prometheus, TARGETS.alertmanager, node="n:9100")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(prometheus_config(targets, paths, 15, 15, own)))
    done = subprocess.run(
        [promtool, "check", "config", str(tmp_path / "prometheus.yml")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_login_is_made_once_and_its_hash_kept(tmp_path):
    login = credentials.logins(tmp_path)["prometheus"]
    assert login.password_file == str(tmp_path.absolute() / "secrets" / "monitoring" / "prometheus-password")
    password = credentials.ensure(login)
    assert len(password) == 64 and credentials.ensure(login) == password
    assert stat.S_IMODE(os.stat(login.password_file).st_mode) == 0o600
    web = tmp_path / "web.yml"
    assert credentials.write_web_config(web, login) is True
    assert stat.S_IMODE(os.stat(web).st_mode) == 0o600
    hashed = credentials.current_hash(web.read_text(), "yitong")
    assert hashed and bcrypt.checkpw(password.encode(), hashed.encode())
    assert credentials.write_web_config(web, login) is False  # the same password: the file is unchanged
    Path(login.password_file).write_text("another")  # a new password: a new hash
    assert credentials.write_web_config(web, login) is True
    assert bcrypt.checkpw(b"another", credentials.current_hash(web.read_text(), "yitong").encode())
    assert credentials.current_hash("not: [yaml", "yitong") is None
    assert credentials.hash_for("pw", "not a hash").startswith("$2b$10$")


TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2382 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7159 1 0 100 0 0 10 0
   1: 00000000:2383 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 7162 1 0 100 0 0 10 0
   2: 0100007F:2382 0100007F:D0F4 01 00000000:00000000 00:00000000 00000000     0        0 7170 1 0 20 4 30 10 -1
"""


@pytest.mark.skipif(socket.htonl(1) == 1, reason="the literal is a little-endian host's /proc/net/tcp")
def test_proc_net_tcp_is_read_as_the_kernel_writes_it():
    assert listeners.parse_table(TCP) == [
        listeners.Listener("127.0.0.1", 9090, 0, 7159),
        listeners.Listener("0.0.0.0", 9091, 1001, 7162),  # the established row (01) is not a listener
    ]
    six = "  sl  local_address remote_address st\n   0: 00000000000000000000000001000000:2382 " + "0" * 32
    six += ":0000 0A 00000000:00000000 00:00000000 00000000     0        0 8000 1 0 100 0 0 10 0\n"
    assert listeners.parse_table(six) == [listeners.Listener("::1", 9090, 0, 8000)]


def test_a_listener_is_found_with_its_holder():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        (found,) = listeners.listening("127.0.0.1", port)
        assert found.port == port and found.uid == os.geteuid()
        assert listeners.held_by(os.getpid(), "127.0.0.1", port)
        assert not listeners.held_by(os.getppid(), "127.0.0.1", port)
        assert listeners.listening("127.0.0.2", port) == []  # another address: not where 127.0.0.2 connects
        assert listeners.who("127.0.0.1", port).startswith(f"pid {os.getpid()} (")
    assert listeners.listening("127.0.0.1", port) == [] and listeners.who("127.0.0.1", port) == ""


def test_the_consoles_monitoring_line():
    def component(state: str, detail: str = "") -> dict:
        return {"installed": True, "state": state, "url": "http://127.0.0.1:1", "detail": detail}

    status = {
        "prometheus": component("error", "Prometheus cannot listen on 127.0.0.1:9090: ..."),
        "alertmanager": component("running"),
        "node_exporter": component("off", "alerts.node_exporter_port is 0"),
    }
    assert monitoring(status) == {
        "parts": [
            {"name": "Prometheus", "state": "error", "bad": True},
            {"name": "Alertmanager", "state": "running", "bad": False},
            {"name": "node exporter", "state": "off", "bad": False},
        ],
        "errors": ["Prometheus cannot listen on 127.0.0.1:9090: ..."],
    }
