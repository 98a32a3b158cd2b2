"""The hub's half of the settings file as JSON Schema: the ``hub``, ``auth`` and ``groups`` sections.

:func:`hubconfig.load_settings` checks ``hub`` and ``groups`` with it (one sentence per problem,
naming the key) and ``auth`` with :func:`oauth.validate`; the Helm chart's ``values.schema.json``
embeds the same dicts (``helm/values_schema.py``), so a value the hub refuses at start is refused
by ``helm install`` too, at the same key.
"""

from __future__ import annotations

from typing import Any

from . import oauth

PORT = {"type": "integer", "minimum": 1, "maximum": 65535}

HUB: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "The hub: where it listens and who administers it (docs/settings.md).",
    "properties": {
        "ip": {"type": "string", "description": "where the proxy listens (default 127.0.0.1); not used by the chart"},
        "port": {**PORT, "description": "the proxy's public port (default 8000); not used by the chart"},
        "public_url": {
            "type": ["string", "null"],
            "pattern": "^https?://[^\\s]+$",
            "description": "the hub's public URL (OAuth callbacks, the SSH gateway); default http://<ip>:<port>",
        },
        "internal_port": {**PORT, "description": "the hub's own port (default 8081); not used by the chart"},
        "proxy_api_port": {**PORT, "description": "the proxy's API port (default 8001); not used by the chart"},
        "admin_users": {
            "type": ["array", "null"],
            "items": {"type": "string", "minLength": 1},
            "description": "hub admins; with password logins each gets a generated password on first start",
        },
        "start_concurrency": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "servers started at once, the rest queue (0: automatic)",
        },
    },
}

AUTH: dict[str, Any] = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "description": "Who logs in: password (default), generic (OpenID Connect / OAuth 2) or azuread (docs/login.md).",
    "properties": {
        "kind": {"enum": list(oauth.KINDS), "description": "password | generic | azuread"},
        **{
            key: {"type": ["string", "null"]}
            for key in sorted({k for keys in oauth.KEYS.values() for k in keys} - {"kind"})
            if key not in ("scope", "allowed_groups", "admin_groups", "allow_all")
        },
        **{
            key: {"type": ["array", "string", "null"], "items": {"type": "string", "minLength": 1}}
            for key in ("scope", "allowed_groups", "admin_groups")
        },
        "allow_all": {"type": "boolean", "description": "everyone the provider authenticates may log in"},
    },
}

GROUPS: dict[str, Any] = {
    "type": ["object", "null"],
    "description": "hub groups created (and members added) at every start; password logins only",
    "additionalProperties": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}},
}

#: the sections the hub reads, by name
SECTIONS: dict[str, dict[str, Any]] = {"hub": HUB, "auth": AUTH, "groups": GROUPS}


def problems(settings: dict[str, Any]) -> list[str]:
    """``hub`` and ``groups`` against their schema: ``hub.port: 'x' is not of type 'integer'``."""
    import jsonschema

    out = []
    for name in ("hub", "groups"):
        if settings.get(name) is None:
            continue
        validator = jsonschema.Draft7Validator(SECTIONS[name])
        for error in sorted(validator.iter_errors(settings[name]), key=lambda e: list(e.absolute_path)):
            where = ".".join([name, *(str(p) for p in error.absolute_path)])
            out.append(f"{where}: {error.message}")
    return out
