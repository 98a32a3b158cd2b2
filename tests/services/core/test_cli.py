"""`yitong-service` as the hub starts it: a real process on a free port; its supervisor
(``python -m yitong_services.core.supervise``), which starts it again after a kill -9."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from helpers import free_port

BIN = Path(sys.executable).parent / "yitong-service"


SETTINGS = "profiles: {cpu-small: {cpu: 1, memory: 1Gi}}\nvcs: {default: {groups: [everyone], profiles: [cpu-small]}}\n"


def start(command, tmp_path, hub):
    """``command --settings ... --port N`` as the hub starts it; ``(process, base URL)``."""
    settings = tmp_path / "settings.yaml"
    settings.write_text(SETTINGS)
    port = free_port()
    env = os.environ | {
        "JUPYTERHUB_API_URL": hub.api_url,
        "JUPYTERHUB_API_TOKEN": hub.service_token,
        "JUPYTERHUB_SERVICE_PREFIX": "/services/yitong/",
    }
    proc = subprocess.Popen(
        [*command, "--settings", str(settings), "--data-dir", str(tmp_path / "data"), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, f"http://127.0.0.1:{port}/services/yitong/"


def wait_healthy(proc, base, deadline=30.0) -> float:
    """Seconds until ``/health`` answers 200 (AssertionError with the output after ``deadline``)."""
    began = time.monotonic()
    while time.monotonic() - began < deadline:
        try:
            if httpx.get(base + "api/v1/health", timeout=1).status_code == 200:
                return time.monotonic() - began
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.terminate()
    raise AssertionError(proc.communicate(timeout=10)[0])


def test_cli_serves_under_the_service_prefix(tmp_path, hub):
    proc, base = start([str(BIN)], tmp_path, hub)
    try:
        wait_healthy(proc, base)
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


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_the_supervisor_starts_a_killed_service_again_within_seconds(tmp_path, hub):
    """A kill -9 of the service: the API answers again in a few seconds (the hub alone notices
    after its 30 s poll); a SIGTERM to the supervisor stops both, with no service left behind."""
    proc, base = start([sys.executable, "-m", "yitong_services.core.supervise"], tmp_path, hub)
    try:
        wait_healthy(proc, base, deadline=60)
        [first] = _children(proc.pid)
        os.kill(first, signal.SIGKILL)
        back = wait_healthy(proc, base)
        assert back < 10, back
        [second] = _children(proc.pid)
        assert second != first and proc.poll() is None
        r = httpx.get(base + "api/v1/vcs", headers={"Authorization": f"Bearer {hub.tokens['carol']}"})
        assert [vc["name"] for vc in r.json()] == ["default"]
    finally:
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=30)[0]
    assert "the service ended (signal 9)" in output and "starting it again in 0.5 s" in output
    assert not Path(f"/proc/{second}").exists() or "zombie" in Path(f"/proc/{second}/status").read_text().lower()


def test_a_killed_supervisor_takes_its_service_with_it(tmp_path, hub):
    proc, base = start([sys.executable, "-m", "yitong_services.core.supervise"], tmp_path, hub)
    try:
        wait_healthy(proc, base, deadline=60)
        [child] = _children(proc.pid)
        proc.kill()
        proc.wait(10)
        for _ in range(200):
            if not Path(f"/proc/{child}").exists():
                break
            time.sleep(0.1)
        assert not Path(f"/proc/{child}").exists()
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def test_the_supervisor_refuses_a_bad_settings_file_once(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("vcs: {v: {profiles: [gone]}}\n")
    r = subprocess.run(
        [sys.executable, "-m", "yitong_services.core.supervise", "--settings", str(bad), "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0 and "VC v offers unknown profiles: gone" in r.stderr
