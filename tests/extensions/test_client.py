"""The SDK against the stand-in platform API (a real HTTP server; see conftest)."""

import pytest
from helpers import free_port

from yitong_lab.client import Client, YitongError, error_detail


def test_reads_env_and_sends_token(yt_env):
    with Client() as client:
        me = client.me()
    assert me == {"name": "alice", "admin": False, "groups": ["everyone", "vision"], "vcs": ["default", "vision"]}
    assert yt_env.requests[-1][:3] == ("GET", "/services/yitong/api/v1/me", "token alice-token")


def test_fallback_env(monkeypatch, platform_api):
    for name in ("YITONG_API_URL", "JUPYTERHUB_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("YT_API_URL", platform_api.url + "/")
    monkeypatch.setenv("YT_TOKEN", "bob-token")
    assert Client().me()["name"] == "bob"


def test_vcs_and_vc(yt_env):
    client = Client()
    vcs = client.vcs()
    assert [vc["name"] for vc in vcs] == ["default", "vision"]
    vision = client.vc("vision")
    assert vision["free"] == {"cpu": 6.5, "memory": 14 * 2**30, "nvidia.com/gpu": 1}
    assert [p["name"] for p in client.profiles()] == ["cpu-small", "gpu-1"]


@pytest.mark.parametrize(
    "token, call, status, detail",
    [
        ("bob-token", lambda c: c.vc("vision"), 403, "bob is not a member of VC vision"),
        ("alice-token", lambda c: c.vc("nope"), 404, "no VC named nope"),
        ("alice-token", lambda c: c.delete_vc("vision"), 403, "alice is not an administrator"),
        ("admin-token", lambda c: c.delete_vc("vision"), 409, "VC vision is in use by 1 allocation (alice/)"),
        ("wrong", lambda c: c.me(), 401, "authentication required: send a JupyterHub token"),
    ],
)
def test_errors_carry_the_sentence(platform_api, token, call, status, detail):
    with pytest.raises(YitongError) as info:
        call(Client(platform_api.url, token))
    assert (info.value.status, info.value.detail, str(info.value)) == (status, detail, detail)


def test_admin_create_update_delete(platform_api):
    client = Client(platform_api.url, "admin-token")
    vc = client.create_vc(
        "nlp", quota={"cpu": 8.0}, groups=["nlp"], profiles=["cpu-small"], user_caps={"cpu": 2.0}, description="text"
    )
    assert vc["free"] == {"cpu": 8.0}
    assert platform_api.requests[-1][3] == {
        "name": "nlp",
        "description": "text",
        "quota": {"cpu": 8.0},
        "groups": ["nlp"],
        "profiles": ["cpu-small"],
        "user_caps": {"cpu": 2.0},
    }
    assert client.update_vc("nlp", description="new", quota=None)["description"] == "new"
    assert platform_api.requests[-1][:2] == ("PATCH", "/services/yitong/api/v1/vcs/nlp")
    assert platform_api.requests[-1][3] == {"description": "new"}
    assert client.delete_vc("nlp") is None
    assert [u["vc"] for u in client.usage()] == ["default", "vision"]


def test_not_configured(monkeypatch):
    for name in ("YITONG_API_URL", "YT_API_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(YitongError, match="not configured: set YITONG_API_URL") as info:
        Client().vcs()
    assert info.value.status == 0


def test_unreachable():
    with pytest.raises(YitongError, match="cannot reach the platform API at http://127.0.0.1"):
        Client(f"http://127.0.0.1:{free_port()}/api", "t", timeout=5).vcs()


def test_validation_errors_become_a_sentence():
    body = {"detail": [{"loc": ["body", "quota", "cpu"], "msg": "must be positive"}]}
    assert error_detail(body, 422) == "quota.cpu: must be positive"
    assert error_detail(None, 502) == "the platform API answered HTTP 502"
