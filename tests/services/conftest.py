"""Fixtures for the platform service tests.

- ``hub`` (session): a real JupyterHub subprocess (random ports, SQLite in tmp, real
  configurable-http-proxy) with users admin/alice/bob/carol/dave/erin/frank, groups
  vision (alice, erin, frank), nlp (bob), everyone (all but dave), and a token per user.
- ``db_url`` (session, parametrized ``sqlite`` / ``postgresql``): an empty database; the
  PostgreSQL leg reads ``YITONG_TEST_POSTGRES_URL`` and is skipped locally / failed in CI
  when unreachable.
- ``s3`` (session): moto's S3 server (``ThreadedMotoServer``) on a free port: no real object store can
  be installed here, moto speaks the S3 protocol that s3fs uses; ``s3_storage()`` makes a fresh
  bucket and returns a ``storage`` settings section for it.
- ``service`` (function): the FastAPI app, migrated and seeded on a wiped database, served
  in-process (ASGI) against the hub; ``service.call(who, method, path, **kw)``.
- ``service_factory``: ``async with service_factory(storage={...}) as svc`` for other settings.
- ``store_kind`` (parametrized ``local`` / ``s3``) and ``data_service``: the service on a local
  store or on moto's S3; ``service.data`` has dataset helpers (``DataOps``: ``push``
  uploads what is missing as a pack and commits; ``pack_of``, ``entries``, ``b3``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from blake3 import blake3
from helpers import free_port, require
from sqlalchemy import create_engine, inspect, text

from yitong_services.core.app import create_app
from yitong_services.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CHP = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
USERS = ["admin", "alice", "bob", "carol", "dave", "erin", "frank"]
GROUPS = {"vision": ["alice", "erin", "frank"], "nlp": ["bob"], "everyone": [u for u in USERS if u != "dave"]}
PREFIX = "/services/yitong/"

SETTINGS = {
    "backend": "local",
    # single-person: these tests run jobs as the test process's account; test_confinement.py runs multi-user
    "backends": {"local": {"inventory": {"nvidia.com/gpu": 4}, "mode": "single-person"}},
    "profiles": {
        "cpu-small": {"display_name": "CPU small", "cpu": 1, "memory": "2Gi"},
        "gpu-1": {"cpu": 1, "memory": "2Gi", "accelerator": {"type": "nvidia.com/gpu", "count": 1}},
        "ascend-1": {"cpu": 1, "memory": "2Gi", "accelerator": {"type": "huawei.com/Ascend910", "count": 1}},
    },
    "vcs": {
        "vision": {
            "description": "Computer vision",
            "quota": {"cpu": 8, "memory": "16Gi", "nvidia.com/gpu": 2, "huawei.com/Ascend910": 2},
            "groups": ["vision"],
            "profiles": ["cpu-small", "gpu-1", "ascend-1"],
            "user_caps": {"nvidia.com/gpu": 1},
        },
        "nlp": {
            "quota": {"cpu": 4, "memory": "8Gi", "nvidia.com/gpu": 1},
            "groups": ["nlp"],
            "profiles": ["cpu-small", "gpu-1"],
        },
        "default": {"quota": {"cpu": 4, "memory": "8Gi"}, "groups": ["everyone"], "profiles": ["cpu-small"]},
    },
}


@dataclass
class Hub:
    url: str
    api_url: str
    service_token: str
    admin_token: str
    other_token: str
    tokens: dict[str, str] = field(default_factory=dict)

    def api(self, method: str, path: str, token: str | None = None, **kw) -> httpx.Response:
        headers = {"Authorization": f"token {token or self.admin_token}"}
        r = httpx.request(method, self.api_url + path, headers=headers, timeout=30, **kw)
        r.raise_for_status()
        return r


def _wait_for(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyterhub exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"jupyterhub did not answer at {url}:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory):
    require("configurable-http-proxy", CHP.exists() and shutil.which("node") is not None, str(CHP))
    tmp = tmp_path_factory.mktemp("hub")
    hub_port = free_port()
    env = os.environ | {
        "YT_TEST_DIR": str(tmp),
        "YT_TEST_HUB_PORT": str(hub_port),
        "YT_TEST_PROXY_PORT": str(free_port()),
        "YT_TEST_PROXY_API_PORT": str(free_port()),
        "YT_TEST_CHP": str(CHP),
        "YT_TEST_SERVICE_TOKEN": secrets.token_hex(16),
        "YT_TEST_ADMIN_TOKEN": secrets.token_hex(16),
        "YT_TEST_OTHER_TOKEN": secrets.token_hex(16),
        "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}",
    }
    log = tmp / "hub.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(VENV_BIN / "jupyterhub"), "-f", str(Path(__file__).with_name("hub_config.py"))],
            cwd=tmp,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    api_url = f"http://127.0.0.1:{hub_port}/hub/api"
    try:
        _wait_for(api_url, proc, log)
        h = Hub(
            url=f"http://127.0.0.1:{env['YT_TEST_PROXY_PORT']}",
            api_url=api_url,
            service_token=env["YT_TEST_SERVICE_TOKEN"],
            admin_token=env["YT_TEST_ADMIN_TOKEN"],
            other_token=env["YT_TEST_OTHER_TOKEN"],
        )
        h.api("POST", "/users", json={"usernames": [u for u in USERS if u != "admin"]})
        for group, members in GROUPS.items():
            h.api("POST", f"/groups/{group}", json={"users": members})
        for user in USERS:
            h.tokens[user] = h.api("POST", f"/users/{user}/tokens", json={"note": "tests"}).json()["token"]
        h.tokens["noscope"] = h.api(
            "POST", "/users/alice/tokens", json={"note": "no access", "scopes": ["read:users:name!user"]}
        ).json()["token"]
        h.tokens["service"] = h.service_token
        h.tokens["other"] = h.other_token
        yield h
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _postgres_url() -> str | None:
    url = os.environ.get("YITONG_TEST_POSTGRES_URL")
    if not url:
        return None
    for attempt in range(4):  # a loaded host can keep a live server from answering one try in time
        if attempt:
            time.sleep(attempt)
        try:
            with create_engine(url, connect_args={"connect_timeout": 5}).connect() as conn:
                conn.execute(text("select 1"))
        except Exception:
            continue
        return url
    return None


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def db_kind(request) -> str:
    if request.param == "postgresql":
        require("PostgreSQL", _postgres_url() is not None, "set YITONG_TEST_POSTGRES_URL to a reachable database")
    return request.param


def wipe(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        for table in inspect(conn).get_table_names():
            conn.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    engine.dispose()


@pytest.fixture
def db_url(db_kind: str, tmp_path: Path) -> str:
    if db_kind == "sqlite":
        return f"sqlite:///{tmp_path / 'yitong.sqlite'}"
    url = os.environ["YITONG_TEST_POSTGRES_URL"]
    wipe(url)
    return url


@pytest.fixture
def proc(hub, db_url, tmp_path):
    """A real ``yitong-service`` process on this test's database (test_jobs_process.py ``Proc``)."""
    from tests.services.jobs.test_jobs_process import Proc

    p = Proc(hub, db_url, tmp_path)
    p.start()
    yield p
    p.stop()


def make_settings(db_url: str, data_dir: Path, **overrides) -> Settings:
    raw = {**SETTINGS, "database": {"url": db_url}, "data_dir": str(data_dir), **overrides}
    return Settings.model_validate(raw)


class Service:
    def __init__(self, app, hub: Hub) -> None:
        self.app = app
        self.hub = hub
        self.ctx = app.state.yitong
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://yitong.test")

    def headers(self, who: str | None) -> dict[str, str]:
        return {"Authorization": f"token {self.hub.tokens[who]}"} if who else {}

    async def call(self, who: str | None, method: str, path: str, **kw) -> httpx.Response:
        url = path if path.startswith("/") else f"{PREFIX}api/v1/{path}"
        headers = self.headers(who) | kw.pop("headers", {})
        return await self.client.request(method, url, headers=headers, **kw)

    @property
    def data(self) -> DataOps:
        return DataOps(self)

    async def allocate(self, user: str, vc: str, profile: str, ref: str, kind: str = "server", who: str = "service"):
        body = {"user": user, "vc": vc, "profile": profile, "kind": kind, "ref": ref}
        return await self.call(who, "POST", "allocations", json=body)


def build_app(db_url: str, data_dir: Path, hub: Hub, **overrides):
    return create_app(
        make_settings(db_url, data_dir, **overrides),
        hub_api_url=hub.api_url,
        hub_api_token=hub.service_token,
        prefix=PREFIX,
        reconcile_interval=-1,
    )


@pytest.fixture
async def service(hub: Hub, db_url: str, tmp_path: Path):
    app = build_app(db_url, tmp_path / "data", hub)
    async with app.router.lifespan_context(app):
        svc = Service(app, hub)
        yield svc
        await svc.client.aclose()


@pytest.fixture
def service_factory(hub: Hub, db_url: str, tmp_path: Path):
    """``async with service_factory(storage={...}) as svc``: a service with settings overrides."""

    @contextlib.asynccontextmanager
    async def make(data_dir: str = "data", **overrides):
        app = build_app(db_url, tmp_path / data_dir, hub, **overrides)
        async with app.router.lifespan_context(app):
            svc = Service(app, hub)
            try:
                yield svc
            finally:
                await svc.client.aclose()

    return make


@pytest.fixture
async def second_service(hub: Hub, db_url: str, tmp_path: Path, service: Service):
    """Another app instance (own engine, own process locks) on the same database."""
    app = build_app(db_url, tmp_path / "data2", hub)
    async with app.router.lifespan_context(app):
        svc = Service(app, hub)
        yield svc
        await svc.client.aclose()


@pytest.fixture(scope="session")
def s3():
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def s3_storage(endpoint: str) -> dict:
    """A fresh bucket on moto's S3 and the ``storage`` settings section that points at it."""
    import boto3

    bucket = f"yt-{secrets.token_hex(6)}"
    options = {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
        "use_listings_cache": False,
        "skip_instance_cache": True,
    }
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    ).create_bucket(Bucket=bucket)
    return {"url": f"s3://{bucket}/store", "options": options}


@pytest.fixture(params=["local", "s3"])
def store_kind(request) -> str:
    return request.param


@pytest.fixture
async def data_service(hub: Hub, db_url: str, tmp_path: Path, store_kind: str, request):
    storage = {"gc_grace": 0}
    if store_kind == "s3":
        storage |= s3_storage(request.getfixturevalue("s3"))
    app = build_app(db_url, tmp_path / "data", hub, storage=storage)
    async with app.router.lifespan_context(app):
        svc = Service(app, hub)
        yield svc
        await svc.client.aclose()


class DataOps:
    """What a client does, over the service's HTTP API."""

    def __init__(self, service: Service) -> None:
        self.service = service

    @staticmethod
    def b3(data: bytes) -> str:
        return blake3(data).hexdigest()

    @staticmethod
    def pack_of(blobs) -> bytes:
        """Pack records: ``<32-byte hash><8-byte big-endian size><bytes>``."""
        return b"".join(bytes.fromhex(DataOps.b3(b)) + len(b).to_bytes(8, "big") + b for b in blobs)

    @staticmethod
    def entries(files: dict[str, bytes]) -> list[dict]:
        return [{"path": p, "size": len(b), "hash": DataOps.b3(b)} for p, b in files.items()]

    async def create(self, who: str, dataset: str, visibility: str = "vc") -> None:
        vc, name = dataset.split("/")
        r = await self.service.call(who, "POST", "datasets", json={"vc": vc, "name": name, "visibility": visibility})
        assert r.status_code in (201, 409), r.text

    async def upload(self, who: str, blobs) -> None:
        blobs = {self.b3(b): b for b in blobs}
        r = await self.service.call(who, "POST", "objects/missing", json={"hashes": list(blobs)})
        assert r.status_code == 200, r.text
        todo = [blobs[h] for h in r.json()["missing"]]
        if todo:
            r = await self.service.call(who, "POST", "objects/pack", content=self.pack_of(todo))
            assert r.status_code == 200, r.text

    async def push(self, who: str, dataset: str, files: dict[str, bytes], message: str = "", visibility: str = "vc"):
        await self.create(who, dataset, visibility)
        await self.upload(who, files.values())
        latest = (await self.service.call(who, "GET", f"datasets/{dataset}")).json()["latest"]
        body = {"message": message, "parent": latest, "files": self.entries(files)}
        return await self.service.call(who, "POST", f"datasets/{dataset}/versions", json=body)
