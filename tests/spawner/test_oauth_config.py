"""The settings file's `auth` section -> oauthenticator config (pure), and its refusals.
A login through a real OpenID provider is tests/e2e/test_oidc_login.py."""

from __future__ import annotations

import pytest
import yaml
from traitlets.config import Config

from yitong_spawner import oauth
from yitong_spawner.hubconfig import apply, hub_config, load_settings

GENERIC = {
    "kind": "generic",
    "client_id": "yitong",
    "client_secret": "s3cret",
    "authorize_url": "https://idp/auth",
    "token_url": "https://idp/token",
    "userdata_url": "https://idp/me",
    "allowed_groups": ["team-a"],
}


@pytest.mark.parametrize(
    "auth,message",
    [
        ("generic", "auth must be a mapping"),
        ({"kind": "ldap"}, "auth.kind must be one of password, generic, azuread, not 'ldap'"),
        ({"kind": "password", "client_id": "x"}, "auth: unknown key(s) for kind password: client_id"),
        ({**GENERIC, "groups_key": "g"}, "auth: unknown key(s) for kind generic: groups_key"),
        ({**GENERIC, "tenant_id": "t"}, "unknown key(s) for kind generic: tenant_id"),
        ({k: v for k, v in GENERIC.items() if k != "client_id"}, "auth.client_id is required"),
        ({k: v for k, v in GENERIC.items() if k != "client_secret"}, "give exactly one of client_secret_file"),
        ({**GENERIC, "client_secret_file": "f"}, "give exactly one of client_secret_file"),
        ({k: v for k, v in GENERIC.items() if k != "token_url"}, "missing token_url"),
        ({k: v for k, v in GENERIC.items() if k != "allowed_groups"}, "name allowed_groups"),
        ({**GENERIC, "allowed_groups": "team-a", "allow_all": "yes"}, "auth.allow_all must be true or false"),
        ({**GENERIC, "allowed_groups": [1]}, "auth.allowed_groups must be a list of names"),
        ({**GENERIC, "client_id": ""}, "auth.client_id must be a non-empty string"),
        (
            {"kind": "azuread", "client_id": "x", "client_secret": "y", "allowed_groups": ["g"]},
            "auth.tenant_id is required",
        ),
    ],
)
def test_refusals(auth, message):
    with pytest.raises(oauth.AuthSettingsError, match=None) as e:
        oauth.validate(auth)
    assert message in str(e.value)


def test_groups_section_conflicts_with_provider_groups():
    with pytest.raises(oauth.AuthSettingsError, match="remove the groups section"):
        oauth.validate(GENERIC, {"groups": {"everyone": ["admin"]}})


def test_password_is_the_default():
    assert oauth.validate(None) == {"kind": "password"}
    cfg = hub_config({}, settings_path="s", data_dir="/d", service_token="t")
    assert cfg["JupyterHub"]["authenticator_class"] == "yitong"
    assert "GenericOAuthenticator" not in cfg


def test_generic_config():
    cfg = hub_config(
        {
            "auth": {**GENERIC, "scope": "openid profile", "admin_groups": ["ops"], "groups_claim": "roles"},
            "hub": {"public_url": "https://hub.example.org"},
        },
        settings_path="s",
        data_dir="/d",
        service_token="t",
    )
    assert cfg["JupyterHub"]["authenticator_class"] == "generic-oauth"
    assert cfg["JupyterHub"]["load_groups"] == {}
    assert cfg["GenericOAuthenticator"] == {
        "client_id": "yitong",
        "client_secret": "s3cret",
        "oauth_callback_url": "https://hub.example.org/hub/oauth_callback",
        "scope": ["openid", "profile"],
        "manage_groups": True,
        "auth_state_groups_key": "oauth_user.roles",
        "allowed_groups": {"team-a"},
        "admin_groups": {"ops"},
        "allow_all": False,
        "allow_existing_users": False,
        "username_claim": "preferred_username",
        "authorize_url": "https://idp/auth",
        "token_url": "https://idp/token",
        "userdata_url": "https://idp/me",
    }
    # the traits exist in the installed oauthenticator (a renamed trait would be silently ignored)
    from oauthenticator.generic import GenericOAuthenticator

    c = Config()
    apply(c, cfg)
    auth = GenericOAuthenticator(config=c)
    assert auth.manage_groups and auth.allowed_groups == {"team-a"} and auth.allow_all is False
    assert auth.auth_state_groups_key == "oauth_user.roles" and auth.username_claim == "preferred_username"
    assert set(cfg["GenericOAuthenticator"]) <= set(auth.trait_names())


def test_azuread_config():
    cfg = hub_config(
        {
            "auth": {
                "kind": "azuread",
                "client_id": "app",
                "client_secret": "x",
                "tenant_id": "tid",
                "username_claim": "upn",
                "allowed_groups": ["g1"],
            }
        },
        settings_path="s",
        data_dir="/d",
        service_token="t",
    )
    assert cfg["JupyterHub"]["authenticator_class"] == "azuread"
    traits = cfg["AzureAdOAuthenticator"]
    assert traits["tenant_id"] == "tid" and traits["auth_state_groups_key"] == "user.groups"
    assert (
        traits["username_claim"] == "upn" and traits["oauth_callback_url"] == "http://127.0.0.1:8000/hub/oauth_callback"
    )
    from oauthenticator.azuread import AzureAdOAuthenticator

    c = Config()
    apply(c, cfg)
    auth = AzureAdOAuthenticator(config=c)
    assert auth.authorize_url == "https://login.microsoftonline.com/tid/oauth2/authorize"
    assert set(traits) <= set(auth.trait_names())


def test_secret_file_and_discovery(tmp_path):
    (tmp_path / "oidc-secret").write_text("from-file\n")
    settings = {
        "auth": {
            "kind": "generic",
            "client_id": "c",
            "client_secret_file": "oidc-secret",
            "issuer": "https://idp.example.org/",
            "allowed_groups": ["a"],
        }
    }
    auth = oauth.resolve(
        oauth.validate(settings["auth"]),
        tmp_path,
        get_json=lambda url: {
            "authorization_endpoint": url + "#a",
            "token_endpoint": "https://idp/t",
            "userinfo_endpoint": "https://idp/u",
        },
    )
    assert auth["client_secret"] == "from-file" and "client_secret_file" not in auth
    assert auth["authorize_url"] == "https://idp.example.org/.well-known/openid-configuration#a"
    assert auth["userdata_url"] == "https://idp/u"


@pytest.mark.parametrize(
    "settings,message",
    [
        (
            {
                "auth": {
                    "kind": "generic",
                    "client_id": "c",
                    "client_secret_file": "nope",
                    "issuer": "http://x",
                    "allowed_groups": ["a"],
                }
            },
            "auth.client_secret_file: cannot read",
        ),
        (
            {
                "auth": {
                    "kind": "generic",
                    "client_id": "c",
                    "client_secret": "s",
                    "issuer": "http://127.0.0.1:1",
                    "allowed_groups": ["a"],
                }
            },
            "auth.issuer: cannot read http://127.0.0.1:1/.well-known/openid-configuration",
        ),
        ({"auth": {"kind": "okta"}}, "auth.kind must be one of"),
    ],
)
def test_load_settings_names_the_file_and_key(tmp_path, settings, message):
    path = tmp_path / "yitong.yaml"
    path.write_text(yaml.safe_dump(settings))
    with pytest.raises(ValueError) as e:
        load_settings(path)
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value)
