"""``<base_url>code-server/`` before code-server is there: the launcher (a real subprocess,
real HTTP on a unix socket) serves its install's progress and then execs code-server on the same
socket, and a
real Jupyter server with jupyter-server-proxy answers ``code-server/`` and ``tensorboard/``
with a sentence, not a 500, when the program is not installed.

The "code-server" the launcher execs here is a STAND-IN script (it answers with its argv and
pid): the real one is ~800 MB and is exercised by tests/e2e/test_vscode.py. The install failure
runs the real scripts/install-code-server.sh with a FAKE ``npm`` first on PATH (the npm
registry's boundary), which fails as the kerberos module's build does without libkrb5-dev."""

import asyncio
import fcntl
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import pytest_jupyter.jupyter_server as _pj

from yitong_lab.proxies import code_server, tensorboard

globals().update(
    {
        name: value
        for name, value in vars(_pj).items()
        if type(value).__name__ == "FixtureFunctionDefinition" and name != "jp_asyncio_loop"
    }
)

STAND_IN = """#!{python}
import json, os, sys
from http.server import BaseHTTPRequestHandler
from socketserver import UnixStreamServer
path = sys.argv[sys.argv.index("--socket") + 1]
class H(BaseHTTPRequestHandler):
    def address_string(self):
        return "unix"
    def do_GET(self):
        body = json.dumps({{"argv": sys.argv[1:], "pid": os.getpid()}}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
if os.path.exists(path):
    os.unlink(path)  # as code-server does
server = UnixStreamServer(path, H)
os.chmod(path, int(sys.argv[sys.argv.index("--socket-mode") + 1], 8))
server.serve_forever()
"""


def get(socket: Path, path: str = "/") -> httpx.Response:
    deadline = time.monotonic() + 60  # the launcher is an interpreter's start away
    while time.monotonic() < deadline:
        try:
            return httpx.Client(transport=httpx.HTTPTransport(uds=str(socket))).get(
                f"http://localhost{path}", timeout=5
            )
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(f"{socket}{path}")


def test_progress_then_code_server(tmp_path):
    prefix = tmp_path / "tools" / "code-server"
    partial = Path(f"{prefix}.partial")
    partial.mkdir(parents=True)
    with open(partial / "blob", "wb") as blob:
        blob.truncate(code_server.INSTALLED_BYTES // 4)  # sparse
    socket = tmp_path / "code-server.sock"
    with open(f"{prefix}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # an install under way, as the script holds it
        launcher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "yitong_lab.proxies.code_server_launch",
                "--socket",
                str(socket),
                "--prefix",
                str(prefix),
                str(tmp_path / "home <x>"),
            ]
        )
        try:
            page = get(socket)
            assert page.status_code == 200 and 'id="yt-code-server-install"' in page.text
            assert 'data-state="installing"' in page.text and "25%" in page.text
            assert stat.S_IMODE(socket.stat().st_mode) == 0o600  # only its account connects
            assert get(socket, "/?progress").json() == {
                "marker": "yt-code-server-install",
                "state": "installing",
                "percent": 25,
                "message": "VS Code is being installed: 25%. This page opens it when it is ready.",
            }
            # the install finishes: the script renames the stage to the prefix and lets go of the lock
            (partial / "bin").mkdir()
            (partial / "bin" / "code-server").write_text(STAND_IN.format(python=sys.executable))
            (partial / "bin" / "code-server").chmod(0o755)
            (partial / "blob").unlink()
            partial.rename(prefix)
            fcntl.flock(lock, fcntl.LOCK_UN)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    answer = get(socket, "/?progress")
                    if "yt-code-server-install" not in answer.text:
                        break
                except TimeoutError:
                    pass
                time.sleep(0.2)
            reply = answer.json()
            assert reply["pid"] == launcher.pid  # exec'd, so jupyter-server-proxy still holds its process
            assert reply["argv"] == [
                "--auth",
                "none",
                "--socket",
                str(socket),
                "--socket-mode",
                "600",
                "--disable-proxy",
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                str(tmp_path / "home <x>"),
            ]
            assert stat.S_IMODE(socket.stat().st_mode) == 0o600
        finally:
            launcher.terminate()
            launcher.wait(10)


def test_failed_install_says_so_escaped(tmp_path):
    prefix = tmp_path / "code-server"
    Path(f"{prefix}.failed").write_text("code-server install failed (exit 1) <script>")
    socket = tmp_path / "code-server.sock"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "yitong_lab.proxies.code_server_launch", "--socket", str(socket)]
        + ["--prefix", str(prefix), str(tmp_path)]
    )
    try:
        page = get(socket)
        assert page.status_code == 503
        assert "Installing VS Code failed" in page.text and "make code-server" in page.text
        assert page.text.count("<script>") == 1  # the page's own
        assert "(exit 1) &lt;script&gt;" in page.text
    finally:
        launcher.terminate()
        launcher.wait(10)


ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "scripts" / "install-code-server.sh"
FAKE_NPM = """#!/bin/sh
echo "npm $*" >> "$(dirname "$0")/calls"
echo "gyp info spawn make"
echo "../src/kerberos_gss.h:6:10: fatal error: gssapi/gssapi.h: No such file or directory" >&2
echo "npm error code 1" >&2
exit 1
"""


def fake_npm(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_a_failed_install_says_why_then_a_later_install_opens_vs_code(tmp_path):
    prefix = tmp_path / "tools" / "code-server"
    env = fake_npm(tmp_path)
    run = subprocess.run(["bash", str(INSTALL), str(prefix)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    why = "../src/kerberos_gss.h:6:10: fatal error: gssapi/gssapi.h: No such file or directory (exit 1)"
    log = f"{prefix}.log"
    assert f"[code-server] install failed: {why} (log: {log})" in run.stderr  # where make run's terminal looks
    assert Path(f"{prefix}.failed").read_text() == f"{why}\nlog: {log}\n"
    assert "npm error code 1" in Path(log).read_text()
    assert not Path(f"{prefix}.partial").exists()
    state = code_server.install_state(prefix, on_path="")
    assert (state.state, state.detail, state.log) == ("failed", why, log)
    socket = tmp_path / "code-server.sock"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "yitong_lab.proxies.code_server_launch", "--socket", str(socket)]
        + ["--prefix", str(prefix), str(tmp_path)]
    )
    try:
        r = get(socket, "/?progress")
        assert r.status_code == 503
        assert r.json()["state"] == "failed"
        assert r.json()["message"].startswith(f"Installing VS Code failed: {why} (log: {log}). ")
        # someone fixes it and installs: the script clears the failure and renames its stage
        Path(f"{prefix}.failed").unlink()
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / "code-server").write_text(STAND_IN.format(python=sys.executable))
        (prefix / "bin" / "code-server").chmod(0o755)
        deadline = time.monotonic() + 30
        while "pid" not in (answer := get(socket, "/?progress")).text:
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.2)
        assert answer.json()["pid"] == launcher.pid  # the same process, now VS Code
    finally:
        launcher.terminate()
        launcher.wait(10)


def test_a_missing_need_is_said_before_anything_is_downloaded(tmp_path):
    prefix = tmp_path / "code-server"
    env = {**fake_npm(tmp_path), "KRB5_HEADER": str(tmp_path / "no" / "gssapi.h")}
    check = subprocess.run(["bash", str(INSTALL), "--check", str(prefix)], env=env, capture_output=True, text=True)
    need = "it needs: libkrb5-dev: gssapi/gssapi.h is missing (sudo apt-get install -y libkrb5-dev)"
    assert check.returncode == 1 and need in check.stderr
    assert not Path(f"{prefix}.failed").exists()  # --check only says so
    run = subprocess.run(["bash", str(INSTALL), str(prefix)], env=env, capture_output=True, text=True)
    assert run.returncode == 1 and need in run.stderr
    assert not (tmp_path / "fake-bin" / "calls").exists()  # npm never ran
    state = code_server.install_state(prefix, on_path="")
    assert state.state == "failed" and need in state.detail and state.log == f"{prefix}.log"


# -- through a real Jupyter server and jupyter-server-proxy -------------------------------------


@pytest.fixture
async def jp_asyncio_loop():
    yield asyncio.get_running_loop()


@pytest.fixture
def jp_server_config(tmp_path, monkeypatch):
    # code-server neither in a (fresh) .tools nor on PATH, tensorboard not importable (as in a
    # server's Python without it): the proxy entries are read at start-up
    monkeypatch.setenv("YITONG_CODE_SERVER_PREFIX", str(tmp_path / "tools" / "code-server"))
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", "/bin"]))
    monkeypatch.setattr(tensorboard, "installed", lambda: False)
    assert code_server.install_state(tmp_path / "tools" / "code-server").state == "absent"
    return {"ServerApp": {"jpserver_extensions": {"yitong_lab": True, "jupyter_server_proxy": True}}}


@pytest.fixture
async def proxied_processes_stopped():
    """After the test, stop what jupyter-server-proxy started (here the launcher, which answers
    with the sentence): it leaves its processes running when its server stops, and simpervisor
    starts again one killed from outside, so they are stopped through simpervisor, on the loop."""
    yield
    import gc

    from simpervisor import SupervisedProcess

    for proc in [o for o in gc.get_objects() if isinstance(o, SupervisedProcess)]:
        if proc.running:
            await proc.terminate()


@pytest.mark.parametrize(
    ("path", "sentence"),
    [
        ("code-server/", "VS Code (code-server) is not installed on this server"),
        ("code-server/some/file.js", "VS Code (code-server) is not installed on this server"),
        ("tensorboard/", "TensorBoard is not installed in this server&#x27;s environment"),
    ],
)
async def test_proxy_path_without_the_program_is_a_sentence(jp_fetch, proxied_processes_stopped, path, sentence):
    response = await jp_fetch(path, raise_error=False)
    assert response.code == 503, response.body[:500]
    text = response.body.decode()
    assert sentence in text
    assert "FileNotFoundError" not in text
