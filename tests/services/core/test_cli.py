"""`yitong-service` as the hub starts it: a real process on a free port."""

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from helpers import free_port

BIN = Path(sys.executable).parent / "yitong-service"


def test_cli_serves_under_the_service_prefix(tmp_path, hub):
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "profiles: {cpu-small: {cpu: 1, memory: 1Gi}}\nvcs: {default: {groups: [everyone], profiles: [cpu-small]}}\n"
    )
    port = free_port()
    env = os.environ | {
        "JUPYTERHUB_API_URL": hub.api_url,
        "JUPYTERHUB_API_TOKEN": hub.service_token,
        "JUPYTERHUB_SERVICE_PREFIX": "/services/yitong/",
    }
    proc = subprocess.Popen(
        [str(BIN), "--settings", str(settings), "--data-dir", str(tmp_path / "data"), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}/services/yitong/"
    try:
        for _ in range(120):
            try:
                if httpx.get(base + "api/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.25)
        else:
            proc.terminate()
            raise AssertionError(proc.communicate(timeout=10)[0])
        r = httpx.get(base + "api/v1/vcs", headers={"Authorization": f"Bearer {hub.tokens['carol']}"})
        assert [vc["name"] for vc in r.json()] == ["default"]
        assert (tmp_path / "data" / "yitong.sqlite").exists()
    finally:
        proc.terminate()
        proc.wait(20)


def test_cli_refuses_a_bad_settings_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("vcs: {v: {profiles: [gone]}}\n")
    r = subprocess.run([str(BIN), "--settings", str(bad), "--data-dir", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "VC v offers unknown profiles: gone" in r.stderr
