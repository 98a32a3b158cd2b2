"""Start the whole embedded platform (real hub, real proxy, real platform service) for tests
and benchmarks.

``Stack(tmp_path, settings).start()`` writes the settings file, sets passwords, launches
``jupyterhub -f jupyterhub_config.py`` from the checkout on free ports with its own data
directory, and waits until the hub and the platform service answer. ``stop()`` sends SIGINT
(what Ctrl-C does) and waits.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml
from helpers import free_port

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
YT = str(VENV_BIN / "yt")


class Stack:
    def __init__(self, workdir: Path, settings: dict[str, Any], passwords: dict[str, str], cwd: Path | None = None):
        self.workdir = Path(workdir)
        self.cwd = Path(cwd) if cwd else self.workdir  # where `jupyterhub` runs (make run: the checkout)
        self.data_dir = self.workdir / "data"
        self.settings = json.loads(json.dumps(settings))
        self.passwords = passwords
        self.port = free_port()
        self.service_port = free_port()
        self.settings.setdefault("hub", {}).update(
            ip="127.0.0.1", port=self.port, internal_port=free_port(), proxy_api_port=free_port()
        )
        self.settings.setdefault("service", {})["port"] = self.service_port
        # the SSH gateway, when the settings have an ssh section: a free port, never the fixed default
        self.ssh_port = free_port() if "ssh" in self.settings else 0
        if self.ssh_port:
            self.settings["ssh"]["port"] = self.ssh_port
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = f"{self.url}/hub/api"
        self.platform = f"{self.url}/services/yitong/api/v1"
        # what notebook servers on the local backend get as YITONG_API_URL: loopback, no proxy
        self.platform_direct = f"http://127.0.0.1:{self.service_port}/services/yitong/api/v1"
        self.proc: subprocess.Popen | None = None
        self.log_path = self.workdir / "hub.log"
        self.admin_token: str | None = None
        self.bin_dir = VENV_BIN  # where `jupyterhub` comes from (tests/shared_python.py for multi-user)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, timeout: float = 90) -> Stack:
        from yitong_spawner.passwords import set_password

        self.data_dir.mkdir(parents=True, exist_ok=True)
        settings_path = self.workdir / "yitong.yaml"
        settings_path.write_text(yaml.safe_dump(self.settings))
        pwfile = self.data_dir / "secrets" / "passwords.json"
        pwfile.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name, password in self.passwords.items():
            set_password(pwfile, name, password)
        env = dict(os.environ, YITONG_SETTINGS=str(settings_path), YITONG_DATA_DIR=str(self.data_dir))
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(self.bin_dir / "jupyterhub"), "-f", str(ROOT / "jupyterhub_config.py")],
            cwd=self.cwd,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hub exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                ok = httpx.get(f"{self.api}/", timeout=2).status_code == 200
                ok = ok and httpx.get(f"{self.platform}/health", timeout=2).status_code == 200
                if ok:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise TimeoutError(f"stack did not come up in {timeout}s:\n{self.tail()}")

    def stop(self, timeout: float = 30) -> int | None:
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""

    # -- people ------------------------------------------------------------------------
    @contextlib.contextmanager
    def login(self, name: str) -> Iterator[httpx.Client]:
        """A browser-like session logged in over HTTP with the user's password."""
        with httpx.Client(base_url=self.url, follow_redirects=True, timeout=60) as client:
            self._login(client, name)
            yield client

    def _login(self, client: httpx.Client, name: str) -> None:
        r = client.get("/hub/login")
        xsrf = self.xsrf(client) or re.search(r'name="_xsrf" value="([^"]+)"', r.text).group(1)
        r = client.post(
            "/hub/login",
            data={"username": name, "password": self.passwords[name], "_xsrf": xsrf},
        )
        if r.status_code >= 400 or "/hub/login" in str(r.url):
            raise AssertionError(f"login of {name} failed: {r.status_code} {r.url}")

    @staticmethod
    def xsrf(client: httpx.Client) -> str:
        """The hub's XSRF cookie (a user's server sets its own under /user/NAME/)."""
        for cookie in client.cookies.jar:
            if cookie.name == "_xsrf" and cookie.path in ("/hub/", "/hub"):
                return cookie.value
        return ""

    def token(self, name: str) -> str:
        """An API token for a user, asked for through a session logged in with their password."""
        with self.login(name) as c:
            r = c.post(
                f"/hub/api/users/{name}/tokens",
                json={"note": "test", "expires_in": 3600},
                headers={"X-XSRFToken": self.xsrf(c)},
            )
        r.raise_for_status()
        return r.json()["token"]

    def hub(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.api, headers={"Authorization": f"token {token}"}, timeout=120)

    def platform_client(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.platform, headers={"Authorization": f"token {token}"}, timeout=60)

    # -- servers -----------------------------------------------------------------------
    def wait_ready(self, token, user, server="", timeout=90.0) -> dict:
        """Poll the hub until the server is ready (or gone, which fails)."""
        deadline = time.monotonic() + timeout
        with self.hub(token) as hub:
            while time.monotonic() < deadline:
                model = hub.get(f"/users/{user}").json()
                srv = model.get("servers", {}).get(server)
                if srv and srv.get("ready"):
                    return srv
                if not srv:
                    raise AssertionError(f"server {user}/{server} is gone:\n{self.tail(30)}")
                time.sleep(0.3)
        raise TimeoutError(f"{user}/{server} not ready after {timeout}s:\n{self.tail(30)}")

    def stop_server(self, token, user, server=""):
        path = f"/users/{user}/servers/{server}" if server else f"/users/{user}/server"
        with self.hub(token) as hub:
            r = hub.delete(path)
            assert r.status_code in (202, 204, 400, 404), r.text
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if server not in hub.get(f"/users/{user}").json().get("servers", {}):
                    return
                time.sleep(0.3)
        raise TimeoutError(f"{user}/{server} did not stop")

    def allocations(self, token, **params) -> list[dict]:
        with self.platform_client(token) as api:
            r = api.get("/allocations", params=params)
            r.raise_for_status()
            return r.json()

    # -- the yt CLI ----------------------------------------------------------------------
    def cli_env(self, token: str, **extra: str) -> dict[str, str]:
        """The environment of a terminal outside any notebook server, logged in with token."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("YITONG_", "JUPYTERHUB_"))}
        env.update(YT_API_URL=self.platform, YT_TOKEN=token, **extra)
        return env

    def yt(self, token: str, *args: str, check: bool = True, **extra: str) -> subprocess.CompletedProcess:
        r = subprocess.run([YT, *args], env=self.cli_env(token, **extra), capture_output=True, text=True, timeout=300)
        if check and r.returncode:
            raise AssertionError(f"yt {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r
