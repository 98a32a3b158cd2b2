"""OpenAPI, Swagger UI, Prometheus metrics, the old admin page's redirect to the console, the OAuth
redirect (the console's own pages and their escaping: tests/services/ops/test_console_pages.py)."""

from urllib.parse import parse_qs, urlparse

PREFIX = "/services/yitong/"


async def test_openapi_and_docs(service):
    r = await service.call(None, "GET", f"{PREFIX}openapi.json")
    assert r.status_code == 200
    paths = r.json()["paths"]
    for path in (
        "vcs",
        "vcs/{vc}",
        "profiles",
        "profiles/{name}",
        "spawn-options",
        "allocations",
        "allocations/{allocation_id}",
        "usage",
        "me",
        "health",
    ):
        assert f"{PREFIX}api/v1/{path}" in paths
    r = await service.call(None, "GET", f"{PREFIX}docs")
    assert r.status_code == 200 and "swagger" in r.text.lower()
    health = (await service.call(None, "GET", "health")).json()
    assert (health["status"], health["mode"]) == ("ok", "single-person")


async def test_metrics(service):
    assert (await service.allocate("alice", "vision", "gpu-1", "alice/")).status_code == 201
    assert (await service.call(None, "GET", f"{PREFIX}metrics")).status_code == 401
    assert (await service.call("alice", "GET", f"{PREFIX}metrics")).status_code == 403
    r = await service.call("admin", "GET", f"{PREFIX}metrics")
    assert r.status_code == 200
    text = r.text
    assert 'yitong_vc_quota{resource="nvidia.com/gpu",vc="vision"} 2.0' in text
    assert 'yitong_vc_used{resource="nvidia.com/gpu",vc="vision"} 1.0' in text
    assert 'yitong_allocations{kind="server",vc="vision"} 1.0' in text
    assert 'yitong_inventory{resource="nvidia.com/gpu"} 4.0' in text
    assert 'yitong_http_requests_total{method="POST",route="/allocations",status="201"} 1.0' in text
    assert "yitong_http_request_duration_seconds_bucket" in text


async def test_old_admin_page_redirects_to_the_console(service):
    for who in ("admin", "alice", None):  # the console decides who sees it (403, the login)
        r = await service.call(who, "GET", f"{PREFIX}admin")
        assert r.status_code == 301 and r.headers["location"] == f"{PREFIX}console", (who, r.text)


async def test_console_refuses_users_and_redirects_browsers(service):
    r = await service.call("alice", "GET", f"{PREFIX}console")
    assert r.status_code == 403 and "alice is not a JupyterHub admin" in r.text
    r = await service.call(None, "GET", f"{PREFIX}console")
    assert r.status_code == 302
    location = urlparse(r.headers["location"])
    assert location.path == "/hub/api/oauth2/authorize"
    query = parse_qs(location.query)
    assert query["client_id"] == ["service-yitong"]
    assert query["redirect_uri"] == [f"{PREFIX}oauth_callback"]
    assert r.cookies.get("yitong-oauth-state") == query["state"][0]
    r = await service.call(None, "GET", f"{PREFIX}oauth_callback?code=x&state=forged")
    assert r.status_code == 400 and "OAuth state does not match" in r.json()["detail"]


async def test_oauth_cookie_reads_but_never_writes(service):
    from tornado.web import create_signed_value

    ctx = service.ctx
    cookie = create_signed_value(ctx.cookie_secret, ctx.cookie_name, service.hub.tokens["admin"]).decode()
    service.client.cookies.set(ctx.cookie_name, cookie)
    try:
        assert (await service.call(None, "GET", f"{PREFIX}console")).status_code == 200
        assert (await service.call(None, "GET", "usage")).status_code == 200
        r = await service.call(None, "POST", "vcs", json={"name": "csrf"})
        assert r.status_code == 401
        service.client.cookies.set(ctx.cookie_name, cookie[:-4] + "AAAA")
        assert (await service.call(None, "GET", "usage")).status_code == 401
    finally:
        service.client.cookies.clear()
