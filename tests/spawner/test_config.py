"""Traits, entry points and scopes."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from types import SimpleNamespace

import pytest
from spawner.platform_standin import profile
from traitlets.config import Config

from yitong_spawner.backends import YitongLocalProcessSpawner, resolve_backend
from yitong_spawner.spawner import YitongSpawner
from yitong_spawner.traits import DEPRECATED_TRAITS

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize("trait, key", sorted(DEPRECATED_TRAITS.items()))
def test_deprecated_accelerator_traits_warn_and_no_longer_apply(caplog, trait, key):
    """The accelerator table is the settings' `devices`: a spawner configured the old way says which
    key replaces the trait, and places devices from the platform's placement all the same."""
    c = Config()
    c.YitongSpawner.backend = "slurm"
    setattr(c.YitongSpawner, trait, {"nvidia.com/gpu": "old" if trait == "accelerator_slurm_gres" else {}})
    with caplog.at_level(logging.WARNING):
        spawner = YitongSpawner(config=c, user=SimpleNamespace(name="alice"), data_dir="/d")
    assert f"YitongSpawner.{trait} is deprecated and ignored: set {key} in the settings file" in caplog.text
    gpu = profile("gpu-1", accelerator={"type": "nvidia.com/gpu", "count": 1})
    assert spawner.profile_overrides({"name": "vision"}, gpu, {})["req_gres"] == "gpu:1"


def test_the_hub_names_deprecated_traits_at_start(tmp_path):
    """jupyterhub_config.py (loaded as the hub loads it) warns about a deprecated trait an admin set."""
    text = (ROOT / "jupyterhub_config.py").read_text()
    marker = "apply(c, cfg)\n"
    assert marker in text
    admin_line = 'c.YitongSpawner.accelerator_tolerations = {"nvidia.com/gpu": []}\n'
    (tmp_path / "jupyterhub_config.py").write_text(text.replace(marker, marker + admin_line))
    load = (
        "from traitlets.config.loader import PyFileConfigLoader as L; L('jupyterhub_config.py', path='.').load_config()"
    )
    env = {**os.environ, "YITONG_SETTINGS": str(ROOT / "yitong.example.yaml"), "YITONG_DATA_DIR": str(tmp_path / "d")}
    done = subprocess.run(
        [sys.executable, "-c", load], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "YitongSpawner.accelerator_tolerations is deprecated and ignored: set devices.<type>.tolerations" in (
        done.stderr
    )
    assert "accelerator_slurm_gres" not in done.stderr


@pytest.mark.parametrize(
    "text, sentence",
    [
        ("database: {uri: 'postgresql://db/yitong'}\n", "database.uri: unknown key"),
        ("hub: {prot: 8000}\n", "hub: Additional properties are not allowed ('prot' was unexpected)"),
        ("vcs: {}\nvcs: {}\n", "not valid YAML at line 2, column 1: the key 'vcs' is given twice"),
        ("vcs: [1\n", "not valid YAML at line 2, column 1"),
    ],
)
def test_a_mistake_in_the_settings_stops_the_hub_with_one_sentence(tmp_path, text, sentence):
    """The real hub on jupyterhub_config.py: a typo anywhere in the settings file (the service's
    sections too) ends the start at once with the file and the key or line, no traceback."""
    settings = tmp_path / "settings.yaml"
    settings.write_text(text)
    env = {**os.environ, "YITONG_SETTINGS": str(settings), "YITONG_DATA_DIR": str(tmp_path / "d")}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "jupyterhub"), "-f", str(ROOT / "jupyterhub_config.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"Yitong: {settings}: ") and sentence in line
