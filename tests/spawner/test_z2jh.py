"""The hub config inside zero-to-jupyterhub (the chart's hub.extraConfig), and the hub's settings schema."""

from __future__ import annotations

import re

import pytest
import yaml
from traitlets.config import Config

from yitong_spawner import z2jh
from yitong_spawner.hubconfig import load_settings
from yitong_spawner.passwords import load, verify_password

SETTINGS = {
    "backend": "kubernetes",
    "hub": {"admin_users": ["root-admin"]},
    "service": {"port": 8010},
    "backends": {"kubernetes": {"namespace_prefix": "lab-", "run_as_user": 2000}},
    "groups": {"everyone": ["root-admin"]},
}
PLATFORM = "http://yitong-platform.hubs.svc.cluster.local:8010"
PROXY = "http://proxy-public.hubs.svc.cluster.local"


def z2jh_like() -> Config:
    """What z2jh's jupyterhub_config.py has set when hub.extraConfig runs (hub.services.yitong: {})."""
    c = Config()
    c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
    c.JupyterHub.services = [
        {"name": "jupyterhub-idle-culler", "command": ["python3", "-m", "jupyterhub_idle_culler"]},
        {"name": "yitong", "api_token": "z2jh-made-token"},
    ]
    c.JupyterHub.load_roles = [
        {"name": "jupyterhub-idle-culler", "scopes": ["list:users"], "services": ["jupyterhub-idle-culler"]},
        {"name": "user", "scopes": ["self"]},
    ]
    c.KubeSpawner.namespace = "hubs"
    return c


def test_z2jh_config_leaves_z2jh_its_parts():
    cfg = z2jh.z2jh_config(SETTINGS, namespace="hubs", service_token="T", data_dir="/srv/jupyterhub/yitong")
    hub = cfg["JupyterHub"]
    assert not {"bind_url", "hub_ip", "hub_port", "db_url", "cookie_secret_file", "pid_file"} & set(hub)
    assert "ConfigurableHTTPProxy" not in cfg
    assert hub["services"] == [{"name": "yitong", "display": False, "url": PLATFORM, "oauth_no_confirm": True}]
    assert hub["authenticator_class"] == "yitong" and hub["spawner_class"] == "yitong"
    assert hub["load_groups"] == {"everyone": {"users": ["root-admin"]}}
    assert cfg["YitongSpawner"] == {
        "backend": "kubernetes",
        "data_dir": "/srv/jupyterhub/yitong",
        "platform_api_url": f"{PLATFORM}/services/yitong/api/v1",
        "platform_api_token": "T",
        "user_api_url": f"{PROXY}/services/yitong/api/v1",
        "kube_namespace_prefix": "lab-",
    }
    # notebook pods are fenced to the proxy: they reach the hub's API through it
    assert cfg["Spawner"]["hub_connect_url"] == PROXY
    assert cfg["KubeSpawner"]["uid"] == 2000 and cfg["KubeSpawner"]["automount_service_account_token"] is False
    assert cfg["Authenticator"]["admin_users"] == {"root-admin"}
    assert cfg["YitongAuthenticator"]["password_file"].startswith("/srv/jupyterhub/yitong/")


def test_public_url_is_kept_for_logins():
    settings = {
        **SETTINGS,
        "hub": {"public_url": "https://ai.example.org"},
        "auth": {"kind": "generic", "issuer": "https://sso.example.org", "client_id": "y", "client_secret": "s"},
        "groups": None,
    }
    settings["auth"]["allow_all"] = True
    cfg = z2jh.z2jh_config(settings, namespace="hubs", service_token="T")
    assert cfg["GenericOAuthenticator"]["oauth_callback_url"] == "https://ai.example.org/hub/oauth_callback"
    assert cfg["YitongSpawner"]["user_api_url"] == f"{PROXY}/services/yitong/api/v1"


def test_every_trait_exists():
    """A misspelt trait would be ignored with a warning: each one names a real trait of its class."""
    from jupyterhub.app import JupyterHub
    from jupyterhub.auth import Authenticator
    from jupyterhub.spawner import Spawner
    from kubespawner import KubeSpawner

    from yitong_spawner.authenticator import YitongAuthenticator
    from yitong_spawner.spawner import YitongSpawner

    classes = {
        c.__name__: c for c in (JupyterHub, Authenticator, Spawner, KubeSpawner, YitongAuthenticator, YitongSpawner)
    }
    for cls, traits in z2jh.z2jh_config(SETTINGS, namespace="hubs", service_token="T").items():
        assert set(traits) <= set(classes[cls].class_trait_names()), cls


def test_apply_merges_into_z2jh_lists():
    c = z2jh_like()
    z2jh.apply_z2jh(c, z2jh.z2jh_config(SETTINGS, namespace="hubs", service_token="z2jh-made-token"))
    services = {s["name"]: s for s in c.JupyterHub.services}
    assert services["yitong"] == {
        "name": "yitong",
        "api_token": "z2jh-made-token",
        "display": False,
        "url": PLATFORM,
        "oauth_no_confirm": True,
    }
    assert "jupyterhub-idle-culler" in services
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    assert set(roles) == {"jupyterhub-idle-culler", "yitong-service", "user", "server"}
    assert "access:services!service=yitong" in roles["user"]["scopes"]
    assert c.JupyterHub.spawner_class == "yitong" and c.KubeSpawner.namespace == "hubs"


def test_configure_reads_the_mounted_settings(tmp_path, monkeypatch, capsys):
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(SETTINGS))
    monkeypatch.setenv("POD_NAMESPACE", "hubs")
    monkeypatch.setattr(z2jh, "DATA_DIR", str(tmp_path / "data"))
    c = z2jh_like()
    z2jh.configure(c, str(path))
    assert c.YitongSpawner.platform_api_token == "z2jh-made-token"
    assert c.YitongSpawner.platform_api_url == f"{PLATFORM}/services/yitong/api/v1"
    assert c.YitongAuthenticator.password_file == str(tmp_path / "data" / "secrets" / "passwords.json")
    # first start: the admin's password, once (in the hub's log); a restart prints nothing
    password = re.search(r"password: (\S+)", capsys.readouterr().err).group(1)
    assert verify_password(password, load(c.YitongAuthenticator.password_file)["root-admin"])
    z2jh.configure(z2jh_like(), str(path))
    assert "password" not in capsys.readouterr().err


def test_configure_without_the_service_says_so(tmp_path, monkeypatch):
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(SETTINGS))
    monkeypatch.setenv("POD_NAMESPACE", "hubs")
    monkeypatch.setattr(z2jh, "DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(ValueError, match="hub.services.yitong is missing from the z2jh values"):
        z2jh.configure(Config(), str(path))


@pytest.mark.parametrize(
    "section, sentence",
    [
        ({"hub": {"port": "x"}}, "hub.port: 'x' is not of type 'integer'"),
        ({"hub": {"port": 70000}}, "hub.port: 70000 is greater than the maximum of 65535"),
        ({"hub": {"adminusers": ["a"]}}, "hub: Additional properties are not allowed ('adminusers' was unexpected)"),
        ({"hub": {"public_url": "ftp://x"}}, "hub.public_url: 'ftp://x' does not match"),
        ({"groups": {"everyone": "admin"}}, "groups.everyone: 'admin' is not of type 'array', 'null'"),
    ],
)
def test_hub_sections_are_checked(tmp_path, section, sentence):
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(section))
    with pytest.raises(ValueError) as e:
        load_settings(path)
    assert str(e.value).startswith(f"{path}: ") and sentence in str(e.value)


def test_hub_sections_of_the_example_pass():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert load_settings(root / "yitong.example.yaml")["hub"]["port"] == 8000
