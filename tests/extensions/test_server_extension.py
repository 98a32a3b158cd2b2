"""The server extension in a real Jupyter server (pytest-jupyter's ``jp_fetch``), forwarding to
the stand-in platform API (conftest)."""

import json

import pytest
from tornado.httpclient import HTTPClientError


def decode(response):
    return json.loads(response.body) if response.body else None


async def test_get_forwards_with_the_server_token(yt_env, jp_fetch):
    response = await jp_fetch("yitong", "api", "vcs")
    assert response.code == 200
    assert [vc["name"] for vc in decode(response)] == ["default", "vision"]
    assert yt_env.requests[-1][:3] == ("GET", "/services/yitong/api/v1/vcs", "token alice-token")


async def test_query_and_upstream_error(yt_env, jp_fetch, monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "bob-token")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("yitong", "api", "vcs", "vision", params={"x": "1"})
    assert info.value.code == 403
    assert decode(info.value.response) == {"detail": "bob is not a member of VC vision"}
    assert yt_env.requests[-1][1] == "/services/yitong/api/v1/vcs/vision?x=1"


async def test_post_patch_delete(yt_env, jp_fetch, monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "admin-token")
    body = {"name": "nlp", "quota": {"cpu": 2.0}, "groups": [], "profiles": [], "user_caps": {}}
    response = await jp_fetch("yitong", "api", "vcs", method="POST", body=json.dumps(body))
    assert (response.code, decode(response)["free"]) == (201, {"cpu": 2.0})
    response = await jp_fetch("yitong", "api", "vcs", "nlp", method="PATCH", body=json.dumps({"description": "d"}))
    assert decode(response)["description"] == "d"
    response = await jp_fetch("yitong", "api", "vcs", "nlp", method="DELETE")
    assert (response.code, response.body) == (204, b"")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("yitong", "api", "vcs", method="POST", body=json.dumps({**body, "name": "vision"}))
    assert (info.value.code, decode(info.value.response)) == (409, {"detail": "VC vision already exists"})
    assert [r[0] for r in yt_env.requests] == ["POST", "PATCH", "DELETE", "POST"]


async def test_requires_login(yt_env, jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("yitong", "api", "vcs", headers={"Authorization": ""})
    assert info.value.code == 403
    assert yt_env.requests == []


@pytest.mark.parametrize("path", ["vcs/../../hub/api/users", "%2e%2e/hub", "vcs/%2E/x"])
async def test_refuses_to_climb_out(yt_env, jp_serverapp, http_server_client, jp_auth_header, jp_base_url, path):
    with pytest.raises(HTTPClientError) as info:  # raw path: jp_fetch would escape it
        await http_server_client.fetch(f"{jp_base_url}yitong/api/{path}", headers=jp_auth_header)
    assert info.value.code == 400
    assert yt_env.requests == []


async def test_unconfigured_and_unreachable(jp_fetch, monkeypatch):
    monkeypatch.delenv("YITONG_API_URL", raising=False)
    monkeypatch.delenv("YT_API_URL", raising=False)
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("yitong", "api", "vcs")
    assert info.value.code == 503
    assert "YITONG_API_URL is not set" in decode(info.value.response)["detail"]
    from helpers import free_port

    monkeypatch.setenv("YITONG_API_URL", f"http://127.0.0.1:{free_port()}/api")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("yitong", "api", "vcs")
    assert info.value.code == 502
    assert decode(info.value.response)["detail"].startswith("cannot reach the platform API at http://127.0.0.1")


async def test_api_info(yt_env, jp_fetch, monkeypatch):
    monkeypatch.setenv("YITONG_VC", "vision")
    monkeypatch.setenv("YITONG_PROFILE", "gpu-1")
    response = await jp_fetch("yitong", "api-info")
    assert decode(response) == {"configured": True, "vc": "vision", "profile": "gpu-1"}
    monkeypatch.delenv("YITONG_API_URL")
    monkeypatch.delenv("YITONG_VC")
    response = await jp_fetch("yitong", "api-info")
    assert decode(response) == {"configured": False, "vc": None, "profile": "gpu-1"}


async def test_conditional_get_goes_through(jp_fetch, monkeypatch):
    """The Experiments view polls with ``If-None-Match``: the forwarder sends it up, hands the
    upstream's ETag down, and answers 304 when the upstream does. The upstream here is a real
    HTTP server that answers as the platform's ETag routes do."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen = []

    class Upstream(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("If-None-Match"))
            if self.headers.get("If-None-Match") == '"v1"':
                self.send_response(304)
                self.send_header("ETag", '"v1"')
                self.end_headers()
                return
            body = b'{"id": 1}'
            self.send_response(200)
            self.send_header("ETag", '"v1"')
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("YITONG_API_URL", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "alice-token")
        first = await jp_fetch("yitong", "api", "experiments", "1")
        assert (first.code, decode(first), first.headers["ETag"]) == (200, {"id": 1}, '"v1"')
        with pytest.raises(HTTPClientError) as info:  # tornado's client raises on 304
            await jp_fetch("yitong", "api", "experiments", "1", headers={"If-None-Match": '"v1"'})
        assert info.value.code == 304 and not info.value.response.body
        assert seen == [None, '"v1"']
    finally:
        server.shutdown()
