"""Who may call every dataset route: owner (alice), VC member (erin), non-member (carol), admin.

Each role acts on its own fresh dataset ``vision/<role>`` owned by alice (version 1, tag ``t``),
once shared with the VC and once private. Datasets a caller may not see answer 404, like
unknown ones, so names do not leak.
"""

import pytest
from blake3 import blake3

ROLES = ["alice", "erin", "carol", "admin"]
FILES = {"a.txt": b"alpha", "b/c.txt": b"gamma"}
MORE = {"a.txt": b"alpha2", "d.txt": b"delta"}
BLOB = b"loose object for the upload routes"


def b3(data: bytes) -> str:
    return blake3(data).hexdigest()


def _commit_body(data) -> dict:
    return {"parent": 1, "message": "m", "files": data.entries(MORE)}


# (method, path, body, {visibility: [status for alice, erin, carol, admin]})
OK4 = [200, 200, 404, 200]
PRIVATE4 = [200, 404, 404, 200]
DATASET_ROUTES = [
    ("GET", "datasets?vc=vision", None, {"vc": OK4, "private": PRIVATE4}),  # 404 = not listed
    ("GET", "datasets/{ds}", None, {"vc": OK4, "private": PRIVATE4}),
    ("PATCH", "datasets/{ds}", {"description": "x"}, {"vc": [200, 403, 404, 200], "private": PRIVATE4}),
    ("DELETE", "datasets/{ds}", None, {"vc": [204, 403, 404, 204], "private": [204, 404, 404, 204]}),
    ("PUT", "datasets/{ds}/tags/u", {"version": 1}, {"vc": OK4, "private": PRIVATE4}),
    ("DELETE", "datasets/{ds}/tags/t", None, {"vc": [204, 204, 404, 204], "private": [204, 404, 404, 204]}),
    ("POST", "datasets/{ds}/versions", "commit", {"vc": [201, 201, 404, 201], "private": [201, 404, 404, 201]}),
    ("GET", "datasets/{ds}/versions", None, {"vc": OK4, "private": PRIVATE4}),
    ("GET", "datasets/{ds}/versions/t", None, {"vc": OK4, "private": PRIVATE4}),
    ("GET", "datasets/{ds}/versions/1/manifest", None, {"vc": OK4, "private": PRIVATE4}),
    ("GET", "datasets/{ds}/versions/latest/objects/" + b3(b"alpha"), None, {"vc": OK4, "private": PRIVATE4}),
    ("POST", "datasets/{ds}/versions/1/fetch", {"hashes": [b3(b"gamma")]}, {"vc": OK4, "private": PRIVATE4}),
    ("GET", "datasets/{ds}/diff?from=1&to=1", None, {"vc": OK4, "private": PRIVATE4}),
    ("DELETE", "datasets/{ds}/versions/1", None, {"vc": [204, 403, 404, 204], "private": [204, 404, 404, 204]}),
    ("POST", "datasets/{ds}/versions/v1/materialize", None, {"vc": OK4, "private": PRIVATE4}),
]
GLOBAL_ROUTES = [
    ("POST", "datasets", "create", [201, 201, 404, 201]),
    ("POST", "objects/missing", {"hashes": [b3(BLOB)]}, [200, 200, 200, 200]),
    ("POST", "objects/pack", "pack", [200, 200, 200, 200]),
    ("HEAD", f"objects/{b3(BLOB)}/upload", None, [200, 200, 200, 200]),
    ("PATCH", f"objects/{b3(BLOB)}/upload", "patch", [200, 200, 200, 200]),
    ("POST", "storage/gc", None, [403, 403, 403, 200]),
    ("POST", "storage/verify", None, [403, 403, 403, 200]),
]
EXPECTED_DETAIL = {
    ("PATCH", "erin"): "erin may not change dataset vision/erin of alice",
    ("DELETE", "erin"): "erin may not delete",
    ("GET", "carol"): "there is no dataset vision/carol",
}


async def _call(svc, who, method, path, body, role):
    data = svc.data
    kw = {}
    if body == "commit":
        kw["json"] = _commit_body(data)
    elif body == "create":
        kw["json"] = {"vc": "vision", "name": f"new-{role}"}
    elif body == "pack":
        kw["content"] = data.pack_of([BLOB + role.encode()])
    elif body == "patch":
        kw.update(content=BLOB, headers={"Upload-Offset": "0", "Upload-Length": str(len(BLOB))})
    elif body is not None:
        kw["json"] = body
    return await svc.call(who, method, path, **kw)


@pytest.mark.parametrize("visibility", ["vc", "private"])
@pytest.mark.parametrize("method,path,body,expected", DATASET_ROUTES, ids=[f"{m} {p}" for m, p, _, _ in DATASET_ROUTES])
async def test_dataset_routes(service, method, path, body, expected, visibility):
    data = service.data
    await data.upload("alice", [*FILES.values(), *MORE.values()])
    for role in ROLES:
        r = await data.push("alice", f"vision/{role}", FILES, visibility=visibility)
        assert r.status_code == 201, r.text
        r = await service.call("alice", "PUT", f"datasets/vision/{role}/tags/t", json={"version": 1})
        assert r.status_code == 200, r.text
    got = []
    for role in ROLES:
        r = await _call(service, role, method, path.format(ds=f"vision/{role}"), body, role)
        status = r.status_code
        if path.startswith("datasets?"):
            status = 200 if f"vision/{role}" in [d["full_name"] for d in r.json()] else 404
        got.append(status)
        detail = EXPECTED_DETAIL.get((method, role))
        if detail and visibility == "vc" and status >= 400 and "?" not in path:
            assert r.json()["detail"].startswith(detail)
    assert got == expected[visibility]


@pytest.mark.parametrize("method,path,body,expected", GLOBAL_ROUTES, ids=[f"{m} {p}" for m, p, _, _ in GLOBAL_ROUTES])
async def test_global_routes(service, method, path, body, expected):
    got = [(await _call(service, role, method, path, body, role)).status_code for role in ROLES]
    assert got == expected


ALL = [(m, p) for m, p, _, _ in DATASET_ROUTES + GLOBAL_ROUTES]


@pytest.mark.parametrize("method,path", ALL, ids=[f"{m} {p}" for m, p in ALL])
async def test_anonymous_and_unscoped(service, method, path):
    for who, status in ((None, 401), ("noscope", 403)):
        r = await service.call(who, method, path.format(ds="vision/x"))
        assert r.status_code == status, (who, r.text)
