"""`YitongAuthenticator`: hub login against the PBKDF2 password file (no sign-up page).

Users are created by an administrator (`yitong-passwd set NAME`, or the admin created on first
start by `passwords.ensure_admin`). Set `c.JupyterHub.authenticator_class = "yitong"`.
"""

from __future__ import annotations

import asyncio

from jupyterhub.auth import Authenticator
from traitlets import Unicode, default

from . import password_store as passwords

# a well-formed hash nobody's password matches, to spend equal time on unknown names
_DUMMY_HASH = f"{passwords.ALGORITHM}${passwords.ITERATIONS}${'00' * 16}${'00' * 32}"


class YitongAuthenticator(Authenticator):
    data_dir = Unicode(help="Yitong's data directory. Default: `$YITONG_DATA_DIR`, else the checkout's `.yitong`.").tag(
        config=True
    )

    @default("data_dir")
    def _default_data_dir(self) -> str:
        return passwords.default_data_dir()

    password_file = Unicode(
        help="""JSON file of PBKDF2-SHA256 password hashes (mode 0600), written by `yitong-passwd`.
        Default: `<data_dir>/secrets/passwords.json` (where `yitong-passwd` writes).""",
    ).tag(config=True)

    @default("password_file")
    def _default_password_file(self) -> str:
        return passwords.password_file(self.data_dir)

    @default("allow_all")
    def _default_allow_all(self) -> bool:
        # whoever has a password in the file may log in; there is no open sign-up
        return True

    def get_handlers(self, app):
        """The login page, and `PUT /hub/api/yitong/passwords/{name}` (admin:users) with which the
        platform service's "Add person" sets a password (:mod:`yitong_spawner.password_api`)."""
        from .password_api import default_handlers

        return [*super().get_handlers(app), *default_handlers]

    async def authenticate(self, handler, data):
        name = self.normalize_username((data or {}).get("username", ""))
        password = (data or {}).get("password", "")
        if not name or not isinstance(password, str) or not password:
            return None
        # PBKDF2 takes ~0.1 s: keep it off the event loop
        users = await asyncio.to_thread(passwords.load, self.password_file)
        encoded = users.get(name)
        if encoded is None:
            # spend the same time on unknown names so they cannot be told apart by timing
            await asyncio.to_thread(passwords.verify_password, password, _DUMMY_HASH)
            self.log.warning("Failed login for unknown user %s", name)
            return None
        if await asyncio.to_thread(passwords.verify_password, password, encoded):
            return name
        self.log.warning("Failed login for %s", name)
        return None
