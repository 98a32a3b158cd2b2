"""`PUT /hub/api/yitong/passwords/{name}`: set a person's password over the hub's REST API.

The password file lives beside the hub (on Kubernetes, in the hub's pod), so the platform
service's "Add person" (the console) sets passwords here rather than writing the file itself.
The scope is JupyterHub's own `admin:users` (filtered by user). Body: `{"password": "..."}`
(8 characters at least) or `{"generate": true}`; the answer is `{"name": ..., "password": ...}`
with the password only when it was generated (shown once). Registered by
`YitongAuthenticator.get_handlers`, so it exists only with password logins.
"""

from __future__ import annotations

import asyncio
import json

from jupyterhub.apihandlers.base import APIHandler
from jupyterhub.scopes import needs_scope
from tornado import web

from . import password_store as passwords


class PasswordAPIHandler(APIHandler):
    @needs_scope("admin:users")
    async def put(self, user_name: str) -> None:
        auth = self.authenticator
        name = auth.normalize_username(user_name)
        if name != user_name or not auth.validate_username(name):
            raise web.HTTPError(400, f"{user_name!r} is not a valid JupyterHub user name")
        body = self.get_json_body() or {}
        if not isinstance(body, dict):
            raise web.HTTPError(400, "the body is a JSON object: {'password': ...} or {'generate': true}")
        generated = body.get("generate") is True
        password = passwords.generate_password() if generated else body.get("password")
        if not isinstance(password, str) or len(password) < 8:
            raise web.HTTPError(400, "a password needs at least 8 characters")
        await asyncio.to_thread(passwords.set_password, auth.password_file, name, password)
        self.log.info("Password of %s set by %s", name, self.current_user.name)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"name": name, **({"password": password} if generated else {})}))


default_handlers = [(r"/api/yitong/passwords/([^/]+)", PasswordAPIHandler)]
