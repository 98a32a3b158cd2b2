"""The hub configuration on Kubernetes, inside zero-to-jupyterhub's hub (the Helm chart's ``hub.extraConfig``).

z2jh's own ``jupyterhub_config.py`` sets up the proxy, the hub's database, cookie secret,
KubeSpawner and the service ``yitong`` (``hub.services.yitong``: z2jh generates its API token and
keeps it in the Secret ``hub``, where the platform Deployment reads it). Then the chart's
``hub.extraConfig.yitong`` calls :func:`configure`, which reads the same settings file as the
embedded default (mounted from the Secret ``yitong-settings``) and installs YitongSpawner, the
authenticator, roles and groups from :func:`hubconfig.hub_config`, less what z2jh owns.

:func:`z2jh_config` is pure (settings in, ``{Class: {trait: value}}`` out); :func:`configure`
does the I/O.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .hubconfig import SERVICE_NAME, hub_config, load_settings
from .password_store import ensure_admin

SETTINGS_PATH = "/usr/local/etc/yitong/settings.yaml"
DATA_DIR = "/srv/jupyterhub/yitong"  # on z2jh's hub volume (hub.db.type sqlite-pvc) or the pod's disk
PLATFORM = "yitong-platform"  # the platform's Service, in the hub's namespace (helm/yitong/templates)
PROXY = "proxy-public"  # z2jh's proxy Service (fullnameOverride: "")
#: what z2jh configures itself: taken out of hub_config's answer
Z2JH_OWNS = {
    "JupyterHub": ("bind_url", "hub_ip", "hub_port", "db_url", "cookie_secret_file", "pid_file"),
    "ConfigurableHTTPProxy": None,
}


def z2jh_config(
    settings: dict[str, Any], *, namespace: str, service_token: str, data_dir: str = DATA_DIR
) -> dict[str, dict[str, Any]]:
    """Pure: the hub's configuration inside z2jh, in release namespace ``namespace``.

    The platform is reached at ``http://yitong-platform.<namespace>:<service.port>``; notebook
    servers (in the VCs' namespaces, fenced to the proxy) reach the hub's API and the platform
    through the proxy's Service, ``http://proxy-public.<namespace>.svc.cluster.local``.
    """
    port = int((settings.get("service") or {}).get("port", 8010))
    service_url = f"http://{PLATFORM}.{namespace}.svc.cluster.local:{port}"
    proxy_url = f"http://{PROXY}.{namespace}.svc.cluster.local"
    hub = dict(settings.get("hub") or {})
    hub.setdefault("public_url", proxy_url)
    cfg = hub_config(
        {**settings, "backend": "kubernetes", "hub": hub},
        settings_path=SETTINGS_PATH,
        data_dir=data_dir,
        service_token=service_token,
    )
    for cls, traits in Z2JH_OWNS.items():
        if traits is None:
            cfg.pop(cls, None)
        else:
            for trait in traits:
                cfg[cls].pop(trait, None)
    api_path = f"/services/{SERVICE_NAME}/api/v1"
    (service,) = cfg["JupyterHub"]["services"]
    for key in ("command", "environment", "api_token"):  # z2jh holds the token; the chart runs the service
        service.pop(key)
    service["url"] = service_url
    cfg["YitongSpawner"].update(
        platform_api_url=f"{service_url}{api_path}",
        # the VC namespaces' NetworkPolicies let notebook pods reach the proxy only
        user_api_url=f"{proxy_url}{api_path}",
    )
    cfg["Spawner"]["hub_connect_url"] = proxy_url
    return cfg


def apply_z2jh(c: Any, cfg: dict[str, dict[str, Any]]) -> None:
    """Copy ``cfg`` onto ``c`` over z2jh's config: the service and roles are merged into z2jh's lists."""
    cfg = {cls: dict(traits) for cls, traits in cfg.items()}
    hub = cfg["JupyterHub"]
    ours = {s["name"]: s for s in hub.pop("services")}
    services = [dict(s) for s in (c.JupyterHub.get("services") or [])]
    for s in services:
        s.update(ours.pop(s["name"], {}))
    c.JupyterHub.services = [*services, *ours.values()]
    roles = {r["name"]: r for r in hub.pop("load_roles")}
    kept = [r for r in (c.JupyterHub.get("load_roles") or []) if r["name"] not in roles]
    c.JupyterHub.load_roles = [*kept, *roles.values()]
    for cls, traits in cfg.items():
        section = getattr(c, cls)
        for name, value in traits.items():
            setattr(section, name, value)


def configure(c: Any, path: str = SETTINGS_PATH) -> None:
    """``hub.extraConfig.yitong``: read the settings, take the service token z2jh made, apply; with
    password logins, give each admin a generated password on first start, printed once to the log."""
    settings = load_settings(path)
    token = next((s.get("api_token") for s in c.JupyterHub.get("services") or [] if s["name"] == SERVICE_NAME), None)
    if not token:
        raise ValueError(f"hub.services.{SERVICE_NAME} is missing from the z2jh values: the platform has no token")
    namespace = os.environ.get("POD_NAMESPACE") or _namespace()
    os.makedirs(DATA_DIR, mode=0o700, exist_ok=True)
    cfg = z2jh_config(settings, namespace=namespace, service_token=token, data_dir=DATA_DIR)
    apply_z2jh(c, cfg)
    if cfg["JupyterHub"]["authenticator_class"] == "yitong":  # password logins: as jupyterhub_config.py does
        for admin in sorted(cfg["Authenticator"]["admin_users"]):
            password = ensure_admin(cfg["YitongAuthenticator"]["password_file"], admin)
            if password:
                print(
                    f"Yitong: first start. Admin account created.\n   user:     {admin}\n   password: {password}\n"
                    f" It is shown only this once (stored hashed in {DATA_DIR}/secrets; reset it with"
                    f" `kubectl exec deploy/hub -- yitong-passwd set {admin} --generate --file"
                    f" {cfg['YitongAuthenticator']['password_file']}`).",
                    file=sys.stderr,
                    flush=True,
                )


def _namespace() -> str:
    with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
        return f.read().strip()
