"""Fixtures for yitong_spawner tests.

- ``platform``: a fresh stand-in for the platform service's HTTP API (platform_standin.py),
  listening on a free port in the test's event loop.
- ``db``: an in-memory JupyterHub database with the default roles.
- ``make_spawner(name, **traits)``: a YitongSpawner for user ``name`` built the way the hub builds
  one (``User._new_spawner``) with a Server row, pointed at ``platform``.
"""

from __future__ import annotations

import sys

import pytest
from jupyterhub import orm
from jupyterhub.objects import Hub, Server
from jupyterhub.roles import assign_default_roles, create_role, get_default_roles
from jupyterhub.user import User
from spawner.platform_standin import start_standin
from traitlets.config import Config

from yitong_spawner.spawner import YitongSpawner


@pytest.fixture
async def platform():
    standin, server = start_standin()
    yield standin
    server.stop()


@pytest.fixture
def db():
    session = orm.new_session_factory("sqlite:///:memory:")()
    for role in get_default_roles():
        create_role(session, role)
    session.add(orm.OAuthClient(identifier="jupyterhub"))
    session.commit()
    return session


@pytest.fixture
def make_spawner(db, platform, tmp_path):
    def make(name: str = "alice", config: Config | None = None, **traits):
        orm_user = orm.User(name=name)
        db.add(orm_user)
        db.commit()
        assign_default_roles(db, orm_user)
        hub = Hub(ip="127.0.0.1", port=platform.port, base_url="/hub/")  # the stand-in answers /hub/api
        user = User(orm_user, {"config": config or Config(), "hub": hub, "db": db})
        user.orm_spawners.get("") or user.get_or_create_spawner("")
        traits.setdefault("platform_api_url", platform.url)
        traits.setdefault("platform_api_token", platform.token)
        traits.setdefault("data_dir", str(tmp_path / "data"))
        traits.setdefault("hub", hub)
        traits.setdefault("oauth_client_id", f"jupyterhub-user-{name}")
        traits.setdefault("api_token", "server-token")
        spawner = user._new_spawner("", spawner_class=YitongSpawner, config=config or Config(), **traits)
        orm_server = orm.Server(base_url=f"/user/{name}/")
        db.add(orm_server)
        db.commit()
        spawner.server = Server(orm_server=orm_server)
        return spawner

    return make


PY = sys.executable


@pytest.fixture(scope="session")
async def kube_api(tmp_path_factory):
    """One kmock Kubernetes emulator (with shims) and fake kubelet for the whole session.

    Session-wide because KubeSpawner configures kubernetes_asyncio globally and caches its API
    clients and reflectors per event loop: every KubeSpawner in this session talks to this one.
    """
    import os

    from spawner.fake_kubelet import FakeKubelet
    from spawner.kmock_shims import start_emulator, write_kubeconfig

    emulator, server = await start_emulator()
    kubeconfig = tmp_path_factory.mktemp("kube") / "config"
    write_kubeconfig(str(kubeconfig), str(server.url))
    from kubernetes_asyncio.config import kube_config

    old = os.environ.get("KUBECONFIG"), kube_config.KUBE_CONFIG_DEFAULT_LOCATION
    os.environ["KUBECONFIG"] = kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(kubeconfig)  # read at import
    kubelet = FakeKubelet(server.url)
    await kubelet.start()
    yield emulator, kubelet
    await kubelet.stop()
    from kubespawner import KubeSpawner

    await KubeSpawner._stop_all_reflectors()  # close their watch streams, or the server waits on them
    kube_config.KUBE_CONFIG_DEFAULT_LOCATION = old[1]
    if old[0] is None:
        os.environ.pop("KUBECONFIG", None)
    else:
        os.environ["KUBECONFIG"] = old[0]
    await server.__aexit__(None, None, None)
    await emulator.__aexit__(None, None, None)
