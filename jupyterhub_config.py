"""JupyterHub configuration for Yitong's embedded default.

Everything comes from one settings file (``YITONG_SETTINGS``, default ``yitong.example.yaml``
beside this file) and one data directory (``YITONG_DATA_DIR``, default ``.yitong`` beside this
file) that holds the databases, secrets, logs and user homes. ``make run`` sets both.
"""

import logging
import os
import sys
from pathlib import Path

from yitong_spawner.hubconfig import apply, hub_config, load_settings, read_or_create_secret
from yitong_spawner.passwords import ensure_admin
from yitong_spawner.people import merge_pending, take_pending
from yitong_spawner.traits import deprecated_config

c = get_config()  # noqa: F821 (provided by JupyterHub)

root = Path(__file__).resolve().parent
settings_path = os.path.abspath(os.environ.get("YITONG_SETTINGS") or root / "yitong.example.yaml")
data_dir = os.path.abspath(os.environ.get("YITONG_DATA_DIR") or root / ".yitong")
# The platform's files are its account's alone (docs/security.md): umask 077 for the hub and
# the service it starts, <data_dir> 0711 (homes stay reachable by their owners), secrets 0700.
os.umask(0o077)
os.makedirs(os.path.join(data_dir, "secrets"), mode=0o700, exist_ok=True)
os.makedirs(os.path.join(data_dir, "logs"), mode=0o700, exist_ok=True)  # hub.log, yitong-service.log
os.chmod(data_dir, 0o711)
os.chmod(os.path.join(data_dir, "secrets"), 0o700)

try:
    # the whole file first, as the platform service reads it (unknown keys, a key given twice,
    # the service's sections): a mistake stops the start with one sentence, not a traceback,
    # and nothing starts on a guess; then the hub's own sections
    from yitong_services.core.settings import SettingsError
    from yitong_services.core.settings import load_settings as service_settings

    service_settings(settings_path, data_dir)
    settings = load_settings(settings_path)
except (SettingsError, ValueError) as e:
    sys.exit(f"Yitong: {e}")
proxy = root / "node_modules" / ".bin" / "configurable-http-proxy"
cfg = hub_config(
    settings,
    settings_path=settings_path,
    data_dir=data_dir,
    service_token=read_or_create_secret(Path(data_dir, "secrets", "service-token")),
    proxy_command=[str(proxy)] if proxy.exists() else None,
    bin_dir=os.path.dirname(sys.executable),
)
# People added by `yitong-passwd add` while the hub was stopped: users and group members now
password_logins = cfg["JupyterHub"]["authenticator_class"] == "yitong"
if password_logins:
    merge_pending(cfg, take_pending(data_dir))
apply(c, cfg)

# First start: give every configured admin a generated password, shown once (password logins only).
for admin in sorted(cfg["Authenticator"]["admin_users"] if password_logins else ()):
    password = ensure_admin(cfg["YitongAuthenticator"]["password_file"], admin)
    if password:
        bar = "=" * 64
        print(
            f"\n{bar}\n Yitong: first start. Admin account created.\n"
            f"   user:     {admin}\n   password: {password}\n"
            f" It is shown only this once (stored hashed in {data_dir}/secrets).\n{bar}\n",
            file=sys.stderr,
            flush=True,
        )

# Config that moved to the settings file (the accelerator table: `devices`) is named at start;
# keep this last so config added above it is seen too.
for message in deprecated_config(c):
    logging.getLogger("JupyterHub").warning(message)
