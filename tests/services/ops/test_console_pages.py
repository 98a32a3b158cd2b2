"""The admin console's pages: the hub's look, admins only, tenant text escaped, writes through
the REST API with the page's token (never the cookie)."""

import re

import pytest

PREFIX = "/services/yitong/"
PAGES = [
    "console",
    "console/people",
    "console/dashboard",
    "console/logs",
    "console/vcs/vision",
    "console/profiles/gpu-1",
]
EVIL = '<script>alert("x")</script>'


@pytest.mark.parametrize("page", PAGES)
async def test_pages_are_the_hubs_and_admin_only(service, page):
    r = await service.call("admin", "GET", PREFIX + page)
    assert r.status_code == 200, r.text[:500]
    assert r.headers["cache-control"] == "no-store"
    # JupyterHub's page.html: its stylesheet from the hub's static files, its nav bar and logout
    assert 'href="/hub/static/css/style.min.css' in r.text
    assert 'href="/hub/home"' in r.text and 'href="/hub/logout"' in r.text
    assert 'id="yt-nav-dashboard"' in r.text
    r = await service.call("alice", "GET", PREFIX + page)
    assert r.status_code == 403 and "alice is not a JupyterHub admin" in r.text
    assert (await service.call(None, "GET", PREFIX + page)).status_code == 302  # to the hub's login


async def test_unknown_vc_or_profile_is_404(service):
    r = await service.call("admin", "GET", f"{PREFIX}console/vcs/nope")
    assert r.status_code == 404 and "there is no VC nope" in r.text
    r = await service.call("admin", "GET", f"{PREFIX}console/profiles/%3Cb%3E")
    assert r.status_code == 404 and "&lt;b&gt;" in r.text and "<b>" not in r.text


async def test_human_units_and_escaped_tenant_text(service):
    body = {
        "name": "evil",
        "description": EVIL,
        "groups": ["<b>grp</b>"],
        "quota": {"cpu": "500m", "memory": "24Gi"},
    }
    assert (await service.call("admin", "POST", "vcs", json=body)).status_code == 201
    r = await service.call("admin", "POST", "profiles", json={"name": "p1", "cpu": 1, "memory": "1Gi", "image": EVIL})
    assert r.status_code == 201
    for page in ("console", "console/vcs/evil", "console/profiles/p1"):
        text = (await service.call("admin", "GET", PREFIX + page)).text
        assert "<script>alert" not in text and "<b>grp</b>" not in text, page
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in text, page
    index = (await service.call("admin", "GET", f"{PREFIX}console")).text
    assert "24Gi" in index and "0.5" in index and "&lt;b&gt;grp&lt;/b&gt;" in index
    assert "25769803776" not in index  # bytes are never shown raw
    edit = (await service.call("admin", "GET", f"{PREFIX}console/vcs/evil")).text
    assert 'value="24Gi"' in edit and 'value="500m"' in edit


async def test_the_page_token_writes_the_cookie_does_not(service):
    """The page carries the admin's token for fetch(); the API takes it in the header and audits
    the change; the same cookie without the header cannot write (no XSRF)."""
    from tornado.web import create_signed_value

    ctx = service.ctx
    token = service.hub.tokens["admin"]
    cookie = create_signed_value(ctx.cookie_secret, ctx.cookie_name, token).decode()
    service.client.cookies.set(ctx.cookie_name, cookie)
    try:
        page = await service.call(None, "GET", f"{PREFIX}console")
        assert page.status_code == 200
        found = re.search(r'token: "([^"]+)"', page.text)
        assert found and found.group(1) == token
        body = {"name": "fromconsole", "quota": {"cpu": "2", "memory": "4Gi"}, "groups": ["vision"]}
        assert (await service.call(None, "POST", "vcs", json=body)).status_code == 401
        r = await service.client.post(
            f"{PREFIX}api/v1/vcs", json=body, headers={"Authorization": f"token {found.group(1)}"}
        )
        assert r.status_code == 201, r.text
    finally:
        service.client.cookies.clear()
    audit = (await service.call("admin", "GET", "audit?action=vc.create")).json()["items"]
    assert audit[0]["target"] == "vc fromconsole" and audit[0]["actor"] == "admin"


async def test_people_lists_servers_jobs_with_their_vc(service):
    assert (await service.allocate("alice", "vision", "gpu-1", "alice/gpu")).status_code == 201
    r = await service.call("admin", "GET", f"{PREFIX}console/people")
    assert r.status_code == 200
    row = re.search(r'<tr data-person="alice">(.*?)</tr>', r.text, re.S)
    assert row and "gpu: allocated, not running · VC vision · gpu-1" in row.group(1)
    assert 'data-person="bob"' in r.text  # everyone the hub knows, with nothing too


@pytest.mark.parametrize(
    "culling,expected",
    [
        ({}, ["Idle servers are not stopped (set culling.timeout in the settings file)."]),
        (
            {"timeout": 3600, "vcs": {"vision": 600}, "max_age": 90000},
            [
                "Servers idle for 1 h are stopped.",
                "VC vision: its servers idle for 10 min are stopped.",
                "Any server older than 1 d 1 h is stopped.",
                "A person in several policies meets the shortest.",
            ],
        ),
    ],
)
def test_culling_policy(culling, expected):
    from yitong_services.ops.console import culling_policy

    assert culling_policy(culling) == expected


def test_people_builder():
    from yitong_services.ops.console import people

    users = [{"name": "alice", "servers": {"": {"ready": True, "last_activity": "t"}}}, {"name": "bob", "admin": True}]
    allocations = [
        {
            "ref": "alice/",
            "kind": "server",
            "user": "alice",
            "vc": "vision",
            "profile": "gpu-1",
            "resources": {"nvidia.com/gpu": 1},
        },
        {"ref": "7", "kind": "job", "user": "alice", "vc": "vision", "profile": "job", "resources": {"cpu": 1.0}},
    ]
    jobs = [{"id": 7, "name": "train", "vc": "vision", "user": "carol", "state": "running"}]
    rows = people(users, allocations, jobs, [])
    assert [r["name"] for r in rows] == ["alice", "bob", "carol"]
    assert rows[0]["servers"] == [
        {
            "name": "(default)",
            "state": "ready",
            "vc": "vision",
            "profile": "gpu-1",
            "resources": ["1 nvidia.com/gpu"],
            "last_activity": "t",
        }
    ]
    assert rows[1]["admin"] and rows[2]["jobs"] == [{"id": 7, "name": "train", "vc": "vision", "state": "running"}]


def test_hub_page_vars_keep_names_inside_the_script():
    from yitong_services.ops.console import hub_page_vars

    out = hub_page_vars("/", '</script><script>alert(1)</script>"')
    assert "<" not in out["user"]["json_escaped_name"] and '\\"' in out["user"]["json_escaped_name"]
    assert out["static_url"]("css/style.min.css") == "/hub/static/css/style.min.css"
    assert hub_page_vars("/jh/", "a")["base_url"] == "/jh/hub/"


def test_the_docs_settings_examples():
    """docs/operations.md's `culling` and `reclaim` blocks, verbatim: the hub builds its culler
    from the first (the VC timeouts are the platform's: ops/culler.py), the service reads both."""
    from pathlib import Path

    import yaml

    from yitong_services.ops.schemas import ReclaimSettings
    from yitong_spawner.hubconfig import idle_cullers

    text = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    culling = next(b for b in blocks if "culling" in b)
    services, roles = idle_cullers(culling | {"vcs": {"vision": {"groups": ["vision"]}}}, "/venv/bin")
    assert [s["name"] for s in services] == ["idle-culler"]
    assert "--timeout=3600" in services[0]["command"] and "--cull-every=300" in services[0]["command"]
    from yitong_services.ops.schemas import CullingSettings

    assert CullingSettings.model_validate(culling["culling"]).vcs == {"vision": 1800}
    reclaim = ReclaimSettings.model_validate(next(b for b in blocks if "reclaim" in b)["reclaim"])
    assert reclaim.enabled and reclaim.idle == 1800 and reclaim.require_measurement
