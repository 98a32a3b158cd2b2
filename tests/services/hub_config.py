"""JupyterHub config for the service tests (read by `jupyterhub -f`; ports come from env).

A fake spawner whose "server" is the hub's own HTTP port (the hub only needs an answer),
so servers start and stop in milliseconds.
"""

import os

from jupyterhub.spawner import Spawner

c = get_config()  # noqa: F821
env = os.environ
hub_port = int(env["YT_TEST_HUB_PORT"])


class FakeSpawner(Spawner):
    running = False

    async def start(self):
        self.running = True
        return f"http://127.0.0.1:{hub_port}"

    async def poll(self):
        return None if self.running else 0

    async def stop(self, now=False):
        self.running = False


c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(env["YT_TEST_PROXY_PORT"])
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = hub_port
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env['YT_TEST_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.command = [env["YT_TEST_CHP"]]
c.ConfigurableHTTPProxy.auth_token = "proxy-token-for-tests"
c.JupyterHub.db_url = f"sqlite:///{env['YT_TEST_DIR']}/hub.sqlite"
c.JupyterHub.cookie_secret_file = f"{env['YT_TEST_DIR']}/hub_cookie_secret"
c.JupyterHub.pid_file = f"{env['YT_TEST_DIR']}/hub.pid"
c.JupyterHub.spawner_class = FakeSpawner
c.JupyterHub.authenticator_class = "null"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.allow_named_servers = True
c.JupyterHub.trust_user_provided_tokens = True  # the tokens below are random (secrets.token_hex), as the real config's
c.JupyterHub.services = [
    {"name": "yitong", "api_token": env["YT_TEST_SERVICE_TOKEN"]},
    {"name": "test-admin", "api_token": env["YT_TEST_ADMIN_TOKEN"]},
    {"name": "other", "api_token": env["YT_TEST_OTHER_TOKEN"]},
]
c.JupyterHub.load_roles = [
    # what the platform service's own token needs
    {
        "name": "yitong-service",
        "scopes": [
            "read:users",
            "list:users",
            "read:groups",
            "list:groups",
            "read:servers",
            "delete:servers",
            "tokens",
        ],
        "services": ["yitong"],
    },
    # users (and tokens inheriting their scopes) may call the service
    {"name": "user", "scopes": ["self", "access:services!service=yitong"]},
    {
        "name": "test-admin",
        "scopes": ["admin:users", "admin:groups", "admin:servers", "tokens", "access:services"],
        "services": ["test-admin"],
    },
    {"name": "other-service", "scopes": ["access:services!service=yitong"], "services": ["other"]},
]
c.Authenticator.admin_users = {"admin"}
c.Spawner.server_token_scopes = ["access:services!service=yitong"]
