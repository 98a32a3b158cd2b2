"""Logins from an organisation's identity provider, against a real OpenID Connect provider
(oidc-provider-mock: a Flask/Authlib provider with discovery, authorize, token and userinfo
endpoints, run in a thread by this test) and a real hub + platform service configured through
the settings file's `auth` section (`kind: generic`, endpoints found through the issuer's discovery
document, the secret read from `client_secret_file`).

An HTTP client follows the hub's login redirect, authorises at the provider as `alice` (claims
`preferred_username`, `groups: [team-a]`) and lands back logged in: the hub user exists with group
`team-a` (the provider's groups become hub groups), and the platform's `GET /me` lists the VC whose
groups include `team-a`. A provider group in `admin_groups` makes a hub admin; a user in no allowed
group is refused and never becomes a hub user.
"""

from __future__ import annotations

import re

import httpx
import pytest
from stack import Stack

pytestmark = pytest.mark.e2e

PEOPLE = {
    "alice": {"preferred_username": "alice", "groups": ["team-a"]},
    "olga": {"preferred_username": "olga", "groups": ["team-b", "platform-admins"]},
    "mallory": {"preferred_username": "mallory", "groups": ["contractors"]},
}


def settings(issuer: str, secret_file: str) -> dict:
    return {
        "backend": "local",
        "auth": {
            "kind": "generic",
            "client_id": "yitong-hub",
            "client_secret_file": secret_file,
            "issuer": issuer,
            "username_claim": "preferred_username",
            "scope": ["openid", "profile"],
            "groups_claim": "groups",
            "allowed_groups": ["team-a", "team-b"],
            "admin_groups": ["platform-admins"],
            "login_service": "Example SSO",
        },
        "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.5, "memory": "1Gi"}},
        "vcs": {
            "vision": {"quota": {"cpu": 2, "memory": "4Gi"}, "groups": ["team-a"], "profiles": ["cpu"]},
            "nlp": {"quota": {"cpu": 2, "memory": "4Gi"}, "groups": ["team-b"], "profiles": ["cpu"]},
        },
    }


@pytest.fixture(scope="module")
def provider():
    from oidc_provider_mock import User, run_server_in_thread

    users = [User(sub=name, claims=claims) for name, claims in PEOPLE.items()]
    with run_server_in_thread(user_claims=users) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def sso_stack(provider, tmp_path_factory):
    work = tmp_path_factory.mktemp("sso")
    secret = work / "oidc-client-secret"
    secret.write_text("not-checked-by-the-mock\n")
    secret.chmod(0o600)
    s = Stack(work, settings(provider, str(secret)), passwords={}).start()
    yield s
    s.stop()


def login(stack: Stack, client: httpx.Client, sub: str) -> httpx.Response:
    """What a browser does: the hub's login page -> the provider -> back to the hub's callback."""
    page = client.get("/hub/login")
    assert "Example SSO" in page.text
    r = client.get("/hub/oauth_login")
    assert r.status_code == 200 and r.url.host == "localhost", (r.status_code, r.url)  # the provider's form
    return client.post(str(r.url), data={"sub": sub})


def hub_token(stack: Stack, client: httpx.Client, name: str) -> str:
    r = client.post(
        f"/hub/api/users/{name}/tokens",
        json={"note": "oidc test", "expires_in": 600},
        headers={"X-XSRFToken": stack.xsrf(client)},
    )
    assert r.status_code == 201, r.text
    return r.json()["token"]


def service_token(stack: Stack) -> str:
    return (stack.data_dir / "secrets" / "service-token").read_text().strip()


def test_login_through_provider_maps_groups_to_vcs(sso_stack):
    with httpx.Client(base_url=sso_stack.url, follow_redirects=True, timeout=60) as browser:
        r = login(sso_stack, browser, "alice")
        assert r.status_code == 200 and r.url.host == "127.0.0.1" and "/hub/login" not in r.url.path, r.url
        token = hub_token(sso_stack, browser, "alice")
    with sso_stack.hub(token) as hub:
        me = hub.get("/user").json()
        assert (me["name"], me["groups"], me["admin"]) == ("alice", ["team-a"], False)
    with sso_stack.platform_client(token) as api:
        me = api.get("/me").json()
        assert (me["name"], me["groups"], me["vcs"]) == ("alice", ["team-a"], ["vision"])
        assert [vc["name"] for vc in api.get("/spawn-options").json()["vcs"]] == ["vision"]


def test_admin_group_makes_a_hub_admin(sso_stack):
    with httpx.Client(base_url=sso_stack.url, follow_redirects=True, timeout=60) as browser:
        assert "/hub/login" not in login(sso_stack, browser, "olga").url.path
        token = hub_token(sso_stack, browser, "olga")
    with sso_stack.hub(token) as hub:
        me = hub.get("/user").json()
        assert me["admin"] is True and sorted(me["groups"]) == ["platform-admins", "team-b"]
    with sso_stack.platform_client(token) as api:
        me = api.get("/me").json()
        assert me["admin"] is True and me["vcs"] == ["nlp", "vision"]  # platform admins see every VC


def test_user_in_no_allowed_group_is_refused(sso_stack):
    with httpx.Client(base_url=sso_stack.url, follow_redirects=True, timeout=60) as browser:
        r = login(sso_stack, browser, "mallory")
        assert r.status_code == 403, (r.status_code, r.url)
        assert not any(c.name.startswith("jupyterhub-session") for c in browser.cookies.jar)
    with sso_stack.hub(service_token(sso_stack)) as hub:
        assert hub.get("/users/mallory").status_code == 404
        # no default "admin" account either: admins come from the provider's admin_groups
        assert {u["name"] for u in hub.get("/users").json()} <= {"alice", "olga"}
    with httpx.Client(base_url=sso_stack.url, follow_redirects=False, timeout=30) as anonymous:
        assert anonymous.get("/hub/api/user").status_code == 403


def test_password_login_is_off(sso_stack):
    with httpx.Client(base_url=sso_stack.url, follow_redirects=True, timeout=30) as client:
        page = client.get("/hub/login").text
        assert 'name="password"' not in page
        assert re.search(r"""href=['"][^'"]*/hub/oauth_login""", page) and "Sign in with Example SSO" in page
