"""Traits, entry points and scopes."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest
from traitlets.config import Config

from yitong_spawner.backends import YitongLocalProcessSpawner, resolve_backend
from yitong_spawner.spawner import YitongSpawner


def test_entry_points():
    spawners = {e.name: e.value for e in entry_points(group="jupyterhub.spawners")}
    auths = {e.name: e.value for e in entry_points(group="jupyterhub.authenticators")}
    assert spawners["yitong"] == "yitong_spawner.spawner:YitongSpawner"
    assert auths["yitong"] == "yitong_spawner.authenticator:YitongAuthenticator"


@pytest.mark.parametrize(
    "name, cls",
    [("local", "YitongLocalProcessSpawner"), ("kubernetes", "KubeSpawner"), ("slurm", "YitongSlurmSpawner")],
)
def test_resolve_backend(name, cls):
    """Backends are entry points (group yitong.spawner_backends), resolved by name."""
    assert resolve_backend(name).__name__ == cls
    backends = {e.name for e in entry_points(group="yitong.spawner_backends")}
    assert {"local", "kubernetes", "slurm"} <= backends


def test_unknown_backend_names_the_known_ones():
    with pytest.raises(ValueError, match="no spawner backend 'nomad': known are kubernetes, local, slurm"):
        resolve_backend("nomad")


def test_defaults_from_environment(monkeypatch):
    monkeypatch.setenv("YITONG_PLATFORM_API_URL", "http://127.0.0.1:8010/services/yitong/api/v1")
    monkeypatch.setenv("YITONG_PLATFORM_API_TOKEN", "t0k")
    s = YitongSpawner()
    assert s.platform_api_url == s.user_api_url == "http://127.0.0.1:8010/services/yitong/api/v1"
    assert s.platform_api_token == "t0k"
    assert s.server_token_scopes == [
        "users:activity!user",
        "access:servers!server",
        "access:services!service=yitong",
        "read:users:name!user",
        "read:users:groups!user",
    ]
    assert (s.backend, s.kube_namespace_prefix, s.slurm_account_template, s.start_timeout) == (
        "local",
        "yitong-",
        "{vc}",
        60,
    )


def test_config_and_backend_class():
    c = Config()
    c.YitongSpawner.backend = "Slurm"
    c.YitongSpawner.backend_class = "yitong_spawner.backends.YitongLocalProcessSpawner"
    c.YitongSpawner.user_api_url = "http://hub.example/services/yitong/api/v1"
    s = YitongSpawner(config=c)
    assert s.backend == "slurm" and s.start_timeout == 300
    assert s.backend_cls() is YitongLocalProcessSpawner
    assert s.user_api_url == "http://hub.example/services/yitong/api/v1"
