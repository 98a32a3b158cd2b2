"""The settings file -> JupyterHub configuration (pure), compared against literals."""

from __future__ import annotations

import pytest

from yitong_spawner.hubconfig import apply, hub_config, load_settings, read_or_create_secret


def build(settings, **kw):
    return hub_config(
        settings,
        settings_path="/s.yaml",
        data_dir="/d",
        service_token="T",
        proxy_command=["/chp"],
        bin_dir="/venv/bin",
        **kw,
    )


def test_defaults_for_the_embedded_platform():
    cfg = build({"groups": {"everyone": ["admin"]}})
    hub = cfg["JupyterHub"]
    assert hub["bind_url"] == "http://127.0.0.1:8000"
    assert hub["db_url"] == "sqlite:////d/jupyterhub.sqlite"
    assert hub["load_groups"] == {"everyone": {"users": ["admin"]}}
    [service] = hub["services"]
    assert service["command"] == [
        "/venv/bin/python",
        "-m",
        "yitong_services.core.supervise",
        "--settings",
        "/s.yaml",
        "--data-dir",
        "/d",
        "--port",
        "8010",
    ]
    assert service["url"] == "http://127.0.0.1:8010" and service["api_token"] == "T"
    assert cfg["YitongSpawner"] == {
        "backend": "local",
        "data_dir": "/d",
        "platform_api_token": "T",
        "platform_api_url": "http://127.0.0.1:8010/services/yitong/api/v1",
        "user_api_url": "http://127.0.0.1:8010/services/yitong/api/v1",  # local: loopback, no proxy
    }
    assert cfg["Spawner"]["cmd"] == ["/venv/bin/jupyterhub-singleuser"]
    assert cfg["Spawner"]["environment"]["PATH"].startswith("/venv/bin:")
    assert cfg["ConfigurableHTTPProxy"] == {
        "api_url": "http://127.0.0.1:8001",
        "command": ["/chp"],
        "pid_file": "/d/jupyterhub-proxy.pid",
    }  # never the working directory
    assert cfg["Authenticator"]["admin_users"] == {"admin"}
    user_role = next(r for r in hub["load_roles"] if r["name"] == "user")
    assert "access:services!service=yitong" in user_role["scopes"]


@pytest.mark.parametrize(
    "settings, cls, expected",
    [
        (
            {"backend": "kubernetes", "backends": {"kubernetes": {"namespace_prefix": "ai-"}}},
            "YitongSpawner",
            {"kube_namespace_prefix": "ai-"},
        ),
        (
            {"backend": "slurm", "backends": {"slurm": {"partition": "gpu"}}},
            "YitongSpawner",
            {"slurm_partition": "gpu"},
        ),
        (
            {"backend": "slurm"},
            "YitongSlurmSpawner",
            {"batchspawner_singleuser_cmd": "/venv/bin/batchspawner-singleuser"},
        ),
        (
            {"backend": "slurm", "hub": {"ip": "0.0.0.0", "port": 9000, "public_url": "https://ai.example.org"}},
            "YitongSpawner",
            {"user_api_url": "https://ai.example.org/services/yitong/api/v1"},
        ),
    ],
)
def test_backend_sections(settings, cls, expected):
    cfg = build(settings)
    assert {k: cfg[cls][k] for k in expected} == expected


def test_kubernetes_does_not_point_pods_at_local_binaries():
    assert "cmd" not in build({"backend": "kubernetes"})["Spawner"]


@pytest.mark.parametrize("text, message", [("- a\n- b\n", "YAML mapping"), ("backend: docker\n", "backend must be")])
def test_bad_settings_files(tmp_path, text, message):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_settings(path)


def test_secret_is_created_once_with_0600(tmp_path):
    path = tmp_path / "secrets" / "token"
    first = read_or_create_secret(path)
    assert len(first) == 64 and read_or_create_secret(path) == first
    assert path.stat().st_mode & 0o777 == 0o600


def test_apply_sets_traits():
    from traitlets.config import Config

    c = Config()
    apply(c, build({}))
    assert c.YitongSpawner.backend == "local" and c.JupyterHub.spawner_class == "yitong"


def test_start_concurrency_from_settings():
    assert "start_concurrency" not in build({})["YitongSpawner"]
    assert build({"hub": {"start_concurrency": 4}})["YitongSpawner"]["start_concurrency"] == 4
    for bad in (-1, "4", True, 1.5):
        with pytest.raises(ValueError, match="hub.start_concurrency: a whole number of at least 0"):
            build({"hub": {"start_concurrency": bad}})


def test_idle_culler_is_platform_wide_only():
    """A VC's timeout is the platform's per-VC culler's (tests/services/ops/test_culler.py): the
    hub builds no service per VC, so the console changes it without a hub restart."""
    from yitong_spawner.hubconfig import idle_cullers

    settings = {
        "culling": {"timeout": 3600, "vcs": {"vision": 600}},
        "vcs": {"vision": {"groups": ["vision", "cv"]}, "nlp": {"groups": ["nlp"]}},
    }
    services, roles = idle_cullers(settings, "/venv/bin")
    assert services == [
        {
            "name": "idle-culler",
            "command": [
                "/venv/bin/python",
                "-m",
                "jupyterhub_idle_culler",
                "--timeout=3600",
                "--cull-every=360",
                "--max-age=0",
            ],
            "display": False,
        },
    ]
    assert roles[0]["scopes"] == ["list:users", "read:users:activity", "read:servers", "delete:servers"]
    assert idle_cullers({"culling": {"vcs": {"vision": 600}}, "vcs": settings["vcs"]}, "/bin") == ([], [])


@pytest.mark.parametrize(
    "culling,message",
    [
        ({"timeout": -1}, "culling.timeout"),
        ({"timout": 5}, "unknown keys timout"),
        ({"vcs": {"ghost": 60}}, "no VC ghost"),
        ({"vcs": {"v": -5}}, "culling.vcs.v"),
        ("soon", "a mapping"),
    ],
)
def test_idle_culler_settings_refused(culling, message):
    from yitong_spawner.hubconfig import idle_cullers

    with pytest.raises(ValueError, match=message):
        idle_cullers({"culling": culling, "vcs": {"v": {}}}, "/bin")


def test_no_culling_by_default():
    from yitong_spawner.hubconfig import idle_cullers

    assert idle_cullers({}, "/bin") == ([], [])


def test_service_restart_false_runs_the_service_bare():
    [service] = build({"service": {"restart": False}})["JupyterHub"]["services"]
    assert service["command"][:2] == ["/venv/bin/yitong-service", "--settings"]


@pytest.mark.parametrize(("value", "expected"), [("/opt/ml/bin/mlserver", "/opt/ml/bin/mlserver"), ("", None)])
def test_yitong_mlserver_reaches_the_service(monkeypatch, value, expected):
    # a managed service gets none of the hub's environment: the documented variable is passed on
    monkeypatch.setenv("YITONG_MLSERVER", value)
    [service] = build({})["JupyterHub"]["services"]
    assert service["environment"].get("YITONG_MLSERVER") == expected
