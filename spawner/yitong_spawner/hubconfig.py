"""Turn the Yitong settings file into JupyterHub configuration.

``jupyterhub_config.py`` (embedded default) and, later, the Helm chart's hub config call
:func:`load_settings`, then :func:`hub_config`, then :func:`apply` on ``c``. :func:`hub_config`
is pure: settings in, a ``{Class: {trait: value}}`` mapping out, so it is tested against dict
literals.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Any

import yaml

from . import oauth, settings_schema
from .builders import kube_security
from .password_store import password_file
from .profile_list import hub_overrides
from .scopes import server_scopes

SERVICE_NAME = "yitong"
BACKENDS = ("local", "kubernetes", "slurm")
HERE = Path(__file__).parent


def load_settings(path: str | os.PathLike) -> dict[str, Any]:
    """Read the YAML settings file; a missing or non-mapping file is a clear error."""
    text = Path(path).read_text()
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ValueError(
            f"{path}: not valid YAML{where}: {getattr(e, 'problem', None) or 'cannot be parsed'}"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the settings file must be a YAML mapping")
    backend = data.get("backend", "local")
    if backend not in BACKENDS:
        raise ValueError(f"{path}: backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if wrong := settings_schema.problems(data):
        raise ValueError(f"{path}: {'; '.join(wrong)}")
    try:  # logins: a relative client_secret_file is beside the settings file
        data["auth"] = oauth.resolve(oauth.validate(data.get("auth"), data), Path(path).parent)
    except oauth.AuthSettingsError as e:
        raise ValueError(f"{path}: {e}") from None
    return data


def read_or_create_secret(path: Path, nbytes: int = 32) -> str:
    """A random token kept in the data directory (0600), created atomically once."""
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = secrets.token_hex(nbytes)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    os.replace(tmp, path)
    return value


def hub_config(
    settings: dict[str, Any],
    *,
    settings_path: str,
    data_dir: str,
    service_token: str,
    proxy_command: list[str] | None = None,
    bin_dir: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Pure: the hub's configuration for these settings."""
    hub = settings.get("hub") or {}
    service = settings.get("service") or {}
    backends = settings.get("backends") or {}
    backend = settings.get("backend", "local")
    bin_dir = bin_dir or os.path.dirname(sys.executable)
    ip = hub.get("ip", "127.0.0.1")
    port = int(hub.get("port", 8000))
    service_port = int(service.get("port", 8010))
    service_url = f"http://127.0.0.1:{service_port}"
    prefix = f"/services/{SERVICE_NAME}/"
    api_path = f"{prefix}api/v1"
    public_url = hub.get("public_url") or f"http://{'127.0.0.1' if ip in ('', '0.0.0.0') else ip}:{port}"
    auth = oauth.validate(settings.get("auth"), settings)
    # with an identity provider, admins come from auth.admin_groups: no default "admin" account
    # (a provider user who happens to be named "admin" must not become one)
    admin_users = list(hub.get("admin_users") or (["admin"] if auth["kind"] == "password" else []))

    groups = {name: {"users": list(members or [])} for name, members in (settings.get("groups") or {}).items()}
    cfg: dict[str, dict[str, Any]] = {
        "JupyterHub": {
            "bind_url": f"http://{ip}:{port}",
            "hub_ip": "127.0.0.1",
            "hub_port": int(hub.get("internal_port", 8081)),
            "db_url": f"sqlite:///{os.path.join(data_dir, 'jupyterhub.sqlite')}",
            "cookie_secret_file": os.path.join(data_dir, "secrets", "jupyterhub_cookie_secret"),
            "pid_file": os.path.join(data_dir, "jupyterhub.pid"),
            "allow_named_servers": True,
            # the one token the configuration inserts, the service's, is 256 random bits
            # (read_or_create_secret): checked as a key, not stretched as a password (16,384
            # rounds of SHA-512, ~10 ms of the hub's CPU on every call the service makes)
            "trust_user_provided_tokens": True,
            "authenticator_class": "yitong",
            "spawner_class": "yitong",
            "template_paths": [str(HERE / "hub_templates")],
            "template_vars": {"yitong_admin_url": f"{prefix}console"},
            "logging_config": hub_logging(settings, data_dir),
            "load_groups": groups,
            "services": [
                {
                    "name": SERVICE_NAME,
                    "display": False,  # admins reach it through the "Yitong admin" link
                    "url": service_url,
                    "api_token": service_token,
                    "oauth_no_confirm": True,
                    # yitong-service under its supervisor, which starts it again within a second
                    # of a crash (the hub notices a service's end only every 30 s); service.restart:
                    # false runs it bare, for a process manager of the admin's own
                    "command": [
                        *(
                            [os.path.join(bin_dir, "python"), "-m", "yitong_services.core.supervise"]
                            if service.get("restart", True)
                            else [os.path.join(bin_dir, "yitong-service")]
                        ),
                        "--settings",
                        settings_path,
                        "--data-dir",
                        data_dir,
                        "--port",
                        str(service_port),
                    ],
                    # YITONG_HUB_URL: where the SSH gateway reaches notebook servers (through the proxy)
                    # YITONG_MLSERVER (docs/models.md; the settings file's models.mlserver comes first):
                    # JupyterHub gives a managed service none of its own environment
                    "environment": {
                        "YITONG_DATA_DIR": data_dir,
                        "YITONG_SETTINGS": settings_path,
                        "YITONG_HUB_URL": public_url,
                        **(
                            {"YITONG_MLSERVER": os.environ["YITONG_MLSERVER"]}
                            if os.environ.get("YITONG_MLSERVER")
                            else {}
                        ),
                    },
                }
            ],
            "load_roles": [
                {
                    "name": "yitong-service",
                    "description": "What the platform service needs from the hub",
                    "scopes": [
                        "list:users",
                        "read:users",
                        "read:groups",
                        "list:groups",
                        "read:servers",
                        "read:roles:users",
                        # a job's own short-lived token: minted for its owner, revoked when it ends
                        "tokens",
                        # the accelerator reclaim stops an idle server that holds an accelerator (settings `reclaim`)
                        "delete:servers",
                        # adding a person (`yitong-passwd add`, the console): the hub user, VC groups
                        "admin:users",
                        "admin:groups",
                    ],
                    "services": [SERVICE_NAME],
                },
                {
                    "name": "user",
                    "description": "Default user role, plus access to the Yitong service",
                    "scopes": ["self", f"access:services!service={SERVICE_NAME}"],
                },
                {
                    "name": "server",
                    "description": "A user's server may call the Yitong service as its owner",
                    "scopes": server_scopes(SERVICE_NAME),
                },
            ],
        },
        "Authenticator": {"admin_users": set(admin_users), "allow_all": True},
        "YitongAuthenticator": {"password_file": password_file(data_dir)},
        "YitongSpawner": {
            "backend": backend,
            "data_dir": data_dir,
            "platform_api_url": f"{service_url}{api_path}",
            "platform_api_token": service_token,
            # servers on this machine talk to the service on loopback, not through the proxy
            "user_api_url": f"{service_url if backend == 'local' else public_url}{api_path}",
        },
        "Spawner": {
            "default_url": "/lab",
            "http_timeout": 60,
            "start_timeout": 120,
        },
    }
    cullers, culler_roles = idle_cullers(settings, bin_dir)
    cfg["JupyterHub"]["services"] += cullers
    cfg["JupyterHub"]["load_roles"] += culler_roles
    if hub.get("start_concurrency") is not None:
        cfg["YitongSpawner"]["start_concurrency"] = _count(hub["start_concurrency"], "hub.start_concurrency")
    for cls, traits in oauth.authenticator_config(auth, public_url=public_url).items():
        cfg.setdefault(cls, {}).update(traits)
    cfg["ConfigurableHTTPProxy"] = {
        "api_url": f"http://127.0.0.1:{int(hub.get('proxy_api_port', 8001))}",
        # JupyterHub's default is ./jupyterhub-proxy.pid: two instances from one checkout would
        # stop each other's proxy; everything the platform writes lives under its data directory
        "pid_file": os.path.join(data_dir, "jupyterhub-proxy.pid"),
    }
    if proxy_command:
        cfg["ConfigurableHTTPProxy"]["command"] = proxy_command
    if backend in ("local", "slurm"):
        # notebook servers run from this installation's environment: its jupyterhub-singleuser,
        # and its `yt`, `jupyter` and kernels first on PATH in terminals and notebooks
        cfg["Spawner"]["cmd"] = [os.path.join(bin_dir, "jupyterhub-singleuser")]
        cfg["Spawner"]["environment"] = {"PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", os.defpath)])}
    if backend == "kubernetes":
        kube = backends.get("kubernetes") or {}
        cfg["YitongSpawner"]["kube_namespace_prefix"] = kube.get("namespace_prefix", "yitong-")
        # notebook pods: non-root, no service-account token (the VC namespace's NetworkPolicies are the service's)
        cfg["KubeSpawner"] = kube_security(int(kube.get("run_as_user", 1000)), kube.get("fs_group", 1000))
        # z2jh profile entries: the override keys the platform does not reserve (volumes, hooks, ...)
        if overrides := hub_overrides(settings.get("profiles")):
            cfg["YitongSpawner"]["kubespawner_overrides"] = overrides
    elif backend == "slurm":
        cfg["YitongSlurmSpawner"] = {"batchspawner_singleuser_cmd": os.path.join(bin_dir, "batchspawner-singleuser")}
        slurm = backends.get("slurm") or {}
        if slurm.get("partition"):
            cfg["YitongSpawner"]["slurm_partition"] = slurm["partition"]
    return cfg


CULLING_KEYS = {"timeout", "every", "max_age", "vcs"}


def idle_cullers(settings: dict[str, Any], bin_dir: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``jupyterhub-idle-culler`` as a hub service, from the settings' ``culling`` section:

    ``timeout`` (seconds idle before a server is stopped; 0 or no section: no culling),
    ``every`` (seconds between passes; default a tenth of the timeout, at least 30) and
    ``max_age`` (seconds after which any server is stopped, idle or not; 0: never).

    ``vcs`` (``{vc: seconds}``) is checked here but culled by the platform service, not by a
    hub service: it seeds each VC's ``idle_timeout``, which the console changes and the
    service's per-VC culler (``yitong_services.ops.culler``) reads on every pass, so a change
    holds without restarting the hub. Returns ``(services, roles)``.
    """
    culling = settings.get("culling") or {}
    if not isinstance(culling, dict):
        raise ValueError("culling: a mapping (timeout, every, max_age, vcs)")
    unknown = set(culling) - CULLING_KEYS
    if unknown:
        raise ValueError(
            f"culling: unknown keys {', '.join(sorted(unknown))} (known: {', '.join(sorted(CULLING_KEYS))})"
        )
    timeout = _count(culling.get("timeout", 0), "culling.timeout")
    vcs = settings.get("vcs") or {}
    for vc, seconds in sorted((culling.get("vcs") or {}).items()):
        if vc not in vcs:
            raise ValueError(f"culling.vcs: no VC {vc} in the settings' vcs")
        _count(seconds, f"culling.vcs.{vc}")
    if not timeout:
        return [], []
    every = _count(culling.get("every", max(30, timeout // 10)), "culling.every")
    max_age = _count(culling.get("max_age", 0), "culling.max_age")
    command = [os.path.join(bin_dir, "python"), "-m", "jupyterhub_idle_culler", f"--timeout={timeout}"]
    command += [f"--cull-every={every}", f"--max-age={max_age}"]
    service = {"name": "idle-culler", "command": command, "display": False}
    role = {
        "name": "idle-culler-role",
        "description": f"stop servers idle for {timeout} s",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
    return [service], [role]


HUB_LOG_FORMAT = "[%(levelname)1.1s %(asctime)s.%(msecs).03d %(name)s %(module)s:%(lineno)d] %(message)s"


def hub_logging(settings: dict[str, Any], data_dir: str) -> dict[str, Any]:
    """``JupyterHub.logging_config``: the hub's log also goes to ``<data_dir>/logs/hub.log`` (the
    admin console's cluster logs), rotated at ``ops.log_max_bytes`` keeping ``ops.log_backups``
    files like the service's own; the console handler stays."""
    ops = settings.get("ops") or {}
    return {
        "handlers": {
            "yitong_file": {
                "class": "logging.handlers.RotatingFileHandler",
                "filename": os.path.join(data_dir, "logs", "hub.log"),
                "maxBytes": int(ops.get("log_max_bytes", 10 * 2**20)),
                "backupCount": int(ops.get("log_backups", 5)),
                "encoding": "utf8",
                "formatter": "yitong_file",
                "level": "INFO",
            }
        },
        "formatters": {"yitong_file": {"format": HUB_LOG_FORMAT, "datefmt": "%Y-%m-%d %H:%M:%S"}},
        "loggers": {"JupyterHub": {"handlers": ["console", "yitong_file"]}},
    }


def _count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key}: a whole number of at least 0 (0 = automatic), not {value!r}")
    return value


def apply(c: Any, cfg: dict[str, dict[str, Any]]) -> None:
    """Copy a :func:`hub_config` mapping onto a traitlets config object."""
    if cfg["YitongSpawner"]["backend"] == "slurm":
        import batchspawner  # noqa: F401 (registers /hub/api/batchspawner, where jobs report their port)
    for cls, traits in cfg.items():
        section = getattr(c, cls)
        for name, value in traits.items():
            setattr(section, name, value)
