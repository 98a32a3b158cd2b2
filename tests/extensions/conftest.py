"""Fixtures for the ``yitong-lab`` tests.

- ``platform_api``: a STAND-IN for the platform service's HTTP boundary: a tiny real HTTP
  server (stdlib, own thread, random port) that speaks the contract's JSON of
  docs/architecture.md (``/me``, ``/vcs``, ``/vcs/{vc}``, ``/profiles``, ``/usage``, errors as
  ``{"detail": ...}``) under ``/services/yitong/api/v1``. Quotas and user caps in a VC body
  may be numbers or quantity strings (``"16Gi"``): parsed with the service's own parser
  (``yitong_services.vcs.quantities``), a bad one refused with 422 and its sentence. ``.url`` is the API base,
  ``.requests`` records ``(method, path, authorization, json body)``; set
  ``.fail = (status, detail)`` to make every call fail; ``.reclaim_warnings`` is what
  ``GET /reclaim/warnings`` lists (each caller's own). Tokens:
  ``admin-token`` (admin), ``alice-token`` (member of default and vision), ``bob-token``
  (no VC). End-to-end tests against the real service live in tests/e2e.
- ``yt``: runs the installed ``yt`` console script in a subprocess; ``vc_ls_text``: what
  ``yt vc ls`` prints for alice.
- ``yt_env``: points the SDK at the stand-in as alice (``YITONG_API_URL``, ``JUPYTERHUB_API_TOKEN``).
- ``platform_api.datasets``: the stand-in's dataset routes (``datasets_standin.py``: objects,
  packs, resumable uploads, versions, tags, diff, fetch, materialize; knobs to drop connections).
  ``yt_env`` also points ``YITONG_CACHE_DIR`` (the stat cache) into the test's tmp dir.
- ``platform_api.jobs``: the stand-in's job and run routes (``jobs_standin.py``: submit as JSON or
  YAML, list, detail, logs streamed chunked, cancel, retry, clone, metrics with a job token, runs,
  rerun; ``add(...)`` makes a job in any state).
- ``jp_fetch``, ``jp_serverapp`` and the other pytest-jupyter server fixtures, without its
  event-loop hooks (pytest-asyncio runs the tests, and the server lives on their loop), with
  ``jp_server_config`` enabling the ``yitong_lab`` server extension.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
import pytest_jupyter.jupyter_server as _pj

from yitong_services.vcs.quantities import parse_resources

sys.path.insert(0, str(Path(__file__).parent))
import datasets_standin
import jobs_standin

PREFIX = "/services/yitong/api/v1"
GiB = 2**30
USERS = {
    "admin-token": {"name": "admin", "admin": True, "groups": ["everyone"]},
    "alice-token": {"name": "alice", "admin": False, "groups": ["everyone", "vision"]},
    "bob-token": {"name": "bob", "admin": False, "groups": []},
}
PROFILES = {
    "cpu-small": {
        "name": "cpu-small",
        "display_name": "CPU · 1 core, 2 GiB",
        "description": "",
        "image": "yitong/singleuser-cpu:latest",
        "kernel": "python3",
        "cpu": 1.0,
        "memory": 2 * GiB,
        "accelerator": None,
        "arch": None,
    },
    "gpu-1": {
        "name": "gpu-1",
        "display_name": "1 GPU",
        "description": "",
        "image": "yitong/cuda",
        "kernel": "python3",
        "cpu": 4.0,
        "memory": 16 * GiB,
        "accelerator": {"type": "nvidia.com/gpu", "count": 1},
        "arch": "amd64",
    },
}
VCS = {
    "default": {
        "name": "default",
        "description": "Everyone's VC",
        "groups": ["everyone"],
        "quota": {"cpu": 4.0, "memory": 8 * GiB, "nvidia.com/gpu": 0},
        "profiles": ["cpu-small"],
        "user_caps": {},
        "used": {"cpu": 1.0, "memory": 2 * GiB, "nvidia.com/gpu": 0},
    },
    "vision": {
        "name": "vision",
        "description": "",
        "groups": ["vision"],
        "quota": {"cpu": 8.0, "memory": 16 * GiB, "nvidia.com/gpu": 2},
        "profiles": ["cpu-small", "gpu-1"],
        "user_caps": {"nvidia.com/gpu": 1},
        "used": {"cpu": 1.5, "memory": 2 * GiB, "nvidia.com/gpu": 1},
    },
}


def vc_model(vc: dict) -> dict:
    used = {k: vc["used"].get(k, 0) for k in vc["quota"]}
    return {**vc, "used": used, "free": {k: vc["quota"][k] - used[k] for k in vc["quota"]}}


class StandIn(BaseHTTPRequestHandler):
    """The contract's routes, enough for the lab side's clients."""

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    def reply(self, status: int, body=None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self) -> None:
        state = self.server.state
        route = self.path.split("?")[0][len(PREFIX) :]
        if self.path.startswith(PREFIX) and re.match(r"/(jobs|runs)(/|$)", route):
            auth = self.headers.get("Authorization", "")
            state.requests.append((self.command, self.path, auth, None))
            if state.fail:
                return self.reply(state.fail[0], {"detail": state.fail[1]})
            return jobs_standin.handle(self, state.jobs, auth, route, USERS, state.vcs)
        if self.path.startswith(PREFIX) and route.startswith(("/datasets", "/objects/", "/storage/")):
            auth = self.headers.get("Authorization", "")
            state.requests.append((self.command, self.path, auth, None))
            if state.fail:
                return self.reply(state.fail[0], {"detail": state.fail[1]})
            user = USERS.get(re.sub(r"^(token|Bearer) ", "", auth))
            if user is None:
                return self.reply(401, {"detail": "authentication required: send a JupyterHub token"})
            member_of = [vc["name"] for vc in state.vcs.values() if set(vc["groups"]) & set(user["groups"])]
            return datasets_standin.handle(self, user, member_of, route)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        auth = self.headers.get("Authorization", "")
        state.requests.append((self.command, self.path, auth, body))
        if state.fail:  # a test makes the service refuse everything: (status, detail)
            return self.reply(state.fail[0], {"detail": state.fail[1]})
        path = self.path.split("?")[0]
        if not path.startswith(PREFIX):
            return self.reply(404, {"detail": "Not Found"})
        path = path[len(PREFIX) :]
        if path == "/health":
            return self.reply(200, {"status": "ok"})
        user = USERS.get(re.sub(r"^(token|Bearer) ", "", auth))
        if user is None:
            return self.reply(401, {"detail": "authentication required: send a JupyterHub token"})
        mine = [vc for vc in state.vcs.values() if user["admin"] or set(vc["groups"]) & set(user["groups"])]
        match = re.fullmatch(r"/vcs/([^/]+)", path)
        route = (self.command, "/vcs/{vc}" if match else path)
        if route == ("GET", "/me"):
            return self.reply(200, {**user, "vcs": [vc["name"] for vc in mine]})
        if route == ("GET", "/reclaim/warnings"):  # the caller's own, as the service answers
            server = parse_qs(urlsplit(self.path).query).get("server")
            own = [w for w in state.reclaim_warnings if w["ref"].split("/")[0] == user["name"]]
            own = [w for w in own if server is None or w["server"] == server[0]]
            return self.reply(200, {"warnings": own})
        if route == ("GET", "/vcs"):
            return self.reply(200, [vc_model(vc) for vc in mine])
        if route == ("GET", "/profiles"):
            names = {p for vc in mine for p in vc["profiles"]}
            return self.reply(200, [p for n, p in PROFILES.items() if n in names])
        if self.command in ("POST", "PATCH", "DELETE") or path == "/usage":
            if not user["admin"]:
                return self.reply(403, {"detail": f"{user['name']} is not an administrator"})
        if route == ("GET", "/usage"):
            return self.reply(
                200,
                [
                    {"vc": vc["name"], **{k: vc_model(vc)[k] for k in ("quota", "used", "free")}}
                    for vc in state.vcs.values()
                ],
            )
        for field in ("quota", "user_caps"):  # as the service does: its parser, its sentence
            if isinstance(body, dict) and body.get(field) is not None:
                try:
                    body = {**body, field: parse_resources(body[field])}  # the recorded body stays as sent
                except ValueError as e:
                    return self.reply(422, {"detail": f"{field}: {e}"})
        if route == ("POST", "/vcs"):
            if body["name"] in state.vcs:
                return self.reply(409, {"detail": f"VC {body['name']} already exists"})
            state.vcs[body["name"]] = {**body, "used": {}}
            return self.reply(201, vc_model(state.vcs[body["name"]]))
        if not match:
            return self.reply(404, {"detail": "Not Found"})
        vc = state.vcs.get(match.group(1))
        if vc is None:
            return self.reply(404, {"detail": f"no VC named {match.group(1)}"})
        if self.command == "GET":
            if vc not in mine:
                return self.reply(403, {"detail": f"{user['name']} is not a member of VC {vc['name']}"})
            return self.reply(200, vc_model(vc))
        if self.command == "PATCH":
            vc.update(body)
            return self.reply(200, vc_model(vc))
        if any(vc["used"].values()):
            return self.reply(409, {"detail": f"VC {vc['name']} is in use by 1 allocation (alice/)"})
        del state.vcs[vc["name"]]
        return self.reply(204)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = handle_any


@pytest.fixture
def platform_api():
    state = SimpleNamespace(
        vcs=copy.deepcopy(VCS),
        requests=[],
        fail=None,
        reclaim_warnings=[],
        datasets=datasets_standin.DatasetState(),
        jobs=jobs_standin.JobState(),
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    server.daemon_threads = True
    server.state = state
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    yield state
    server.shutdown()
    server.server_close()
    state.datasets.close()


@pytest.fixture
def yt_env(monkeypatch, platform_api, tmp_path):
    for name in ("YT_API_URL", "YT_TOKEN", "YITONG_VC", "YITONG_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("YITONG_API_URL", platform_api.url)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "alice-token")
    monkeypatch.setenv("YITONG_CACHE_DIR", str(tmp_path / "yt-cache"))
    return platform_api


VC_LS = """\
VC       RESOURCE        QUOTA   USED   FREE
default  cpu             4       1      3
         memory          8 GiB   2 GiB  6 GiB
         nvidia.com/gpu  0       0      0
vision   cpu             8       1.5    6.5
         memory          16 GiB  2 GiB  14 GiB
         nvidia.com/gpu  2       1      1
"""


@pytest.fixture
def vc_ls_text():
    """What `yt vc ls` prints for alice against the stand-in."""
    return VC_LS


@pytest.fixture
def yt():
    """Run the installed `yt` console script (the real entry point) in a subprocess."""
    return run_yt


def run_yt(*argv, token="alice-token", env=None):
    environ = {**os.environ, "JUPYTERHUB_API_TOKEN": token, **(env or {})}
    script = Path(sys.executable).with_name("yt")
    return subprocess.run([str(script), *argv], capture_output=True, text=True, env=environ, timeout=60)


# pytest-jupyter's server fixtures, without its event-loop hooks (pytest-asyncio runs the
# tests): the server lives on the loop the async tests run on.
globals().update(
    {
        name: value
        for name, value in vars(_pj).items()
        if type(value).__name__ == "FixtureFunctionDefinition" and name != "jp_asyncio_loop"
    }
)


@pytest.fixture
async def jp_asyncio_loop():
    import asyncio

    yield asyncio.get_running_loop()


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"yitong_lab": True}}}
