"""Who may call what: every route, as anonymous, a token without the access scope, a non-admin,
a non-member and a foreign service. One table; each row names the expected sentence."""

import pytest

ANY = None
GPU = {"user": "alice", "vc": "vision", "profile": "gpu-1", "kind": "server", "ref": "alice/"}
NEW_VC = {"name": "new"}
NEW_PROFILE = {"name": "new", "cpu": 1, "memory": "1Gi"}

ROUTES = [
    ("GET", "me", None),
    ("GET", "vcs", None),
    ("POST", "vcs", NEW_VC),
    ("GET", "vcs/vision", None),
    ("PATCH", "vcs/vision", {"description": "x"}),
    ("DELETE", "vcs/vision", None),
    ("GET", "profiles", None),
    ("POST", "profiles", NEW_PROFILE),
    ("GET", "profiles/gpu-1", None),
    ("PATCH", "profiles/gpu-1", {"cpu": 2}),
    ("DELETE", "profiles/gpu-1", None),
    ("GET", "spawn-options?user=alice", None),
    ("POST", "allocations", GPU),
    ("GET", "allocations", None),
    ("DELETE", "allocations/{id}", None),
    ("GET", "usage", None),
]


@pytest.mark.parametrize("method,path,body", ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
@pytest.mark.parametrize(
    "who,status,detail",
    [
        (None, 401, "authentication required"),
        ("noscope", 403, "this token lacks the scope access:services!service=yitong"),
    ],
)
async def test_unauthenticated_everywhere(service, method, path, body, who, status, detail):
    r = await service.call(who, method, path.format(id=1), json=body)
    assert r.status_code == status, r.text
    assert r.json()["detail"].startswith(detail)


CASES = [
    # non-admins on admin routes
    ("alice", "POST", "vcs", NEW_VC, 403, "only admins may create VCs"),
    ("alice", "PATCH", "vcs/vision", {"description": "x"}, 403, "only admins may change VCs"),
    ("alice", "DELETE", "vcs/vision", None, 403, "only admins may delete VCs"),
    ("alice", "POST", "profiles", NEW_PROFILE, 403, "only admins may create profiles"),
    ("alice", "PATCH", "profiles/gpu-1", {"cpu": 2}, 403, "only admins may change profiles"),
    ("alice", "DELETE", "profiles/gpu-1", None, 403, "only admins may delete profiles"),
    ("alice", "GET", "usage", None, 403, "only admins may read usage"),
    ("other", "POST", "vcs", NEW_VC, 403, "only admins may create VCs"),
    ("other", "GET", "usage", None, 403, "only admins may read usage"),
    ("other", "DELETE", "profiles/gpu-1", None, 403, "only admins may delete profiles"),
    # non-members
    # (what the caller may not see answers like what does not exist: 404, same sentence)
    ("carol", "GET", "vcs/vision", None, 404, "there is no VC vision"),
    ("carol", "GET", "profiles/gpu-1", None, 404, "there is no profile gpu-1"),
    ("carol", "GET", "spawn-options?user=alice", None, 403, "carol acts only as themself"),
    ("carol", "GET", "spawn-options?user=nobody", None, 403, "carol acts only as themself"),
    ("carol", "POST", "allocations", GPU, 403, "carol acts only as themself"),
    ("carol", "POST", "allocations", GPU | {"user": None, "ref": "carol/"}, 404, "there is no VC vision"),
    ("carol", "GET", "allocations?user=alice", None, 403, "carol may not list the allocations of alice"),
    ("carol", "DELETE", "allocations/{id}", None, 404, "there is no allocation {id}"),
    ("other", "GET", "spawn-options?user=alice", None, 403, "other acts only as themself"),
    ("other", "POST", "allocations", GPU, 403, "other acts only as themself"),
    ("other", "DELETE", "allocations/{id}", None, 404, "there is no allocation {id}"),
    ("other", "GET", "vcs/vision", None, 404, "there is no VC vision"),
    ("dave", "GET", "vcs/nlp", None, 404, "there is no VC nlp"),
    # unknown things
    ("admin", "GET", "vcs/nope", None, 404, "there is no VC nope"),
    ("admin", "PATCH", "vcs/nope", {"description": "x"}, 404, "there is no VC nope"),
    ("admin", "GET", "profiles/nope", None, 404, "there is no profile nope"),
    ("admin", "DELETE", "allocations/999999", None, 404, "there is no allocation 999999"),
    ("service", "GET", "spawn-options?user=nobody", None, 404, "JupyterHub has no user nobody"),
    ("service", "GET", "spawn-options", None, 422, "a service must say which user"),
    ("service", "POST", "allocations", GPU | {"vc": "nope"}, 404, "there is no VC nope"),
    ("service", "POST", "allocations", GPU | {"profile": "nope"}, 404, "there is no profile nope"),
    ("service", "POST", "allocations", {**GPU, "vc": "nlp", "user": "bob", "profile": "ascend-1", "ref": "bob/"}, 422,
     "VC nlp does not offer profile ascend-1"),
    ("service", "POST", "allocations", GPU | {"colour": "red"}, 422, "colour: unknown field"),
    ("service", "POST", "allocations", GPU | {"ref": "bob/"}, 422, "ref of a server must be 'alice/<server name>'"),
    ("service", "POST", "allocations", GPU | {"profile": "cpu-small"}, 409,
     "server alice/ already holds allocation {id} (alice, VC vision, profile gpu-1); release it first"),
    ("service", "POST", "allocations", GPU | {"kind": "pod"}, 422, "kind: Input should be 'server' or 'job'"),
    # allowed: the user themself, admins, this service
    ("alice", "GET", "vcs/vision", None, 200, ANY),
    ("alice", "GET", "profiles/gpu-1", None, 200, ANY),
    ("alice", "GET", "spawn-options?user=alice", None, 200, ANY),
    ("admin", "GET", "spawn-options?user=alice", None, 200, ANY),
    ("service", "GET", "spawn-options?user=alice", None, 200, ANY),
    ("alice", "GET", "allocations", None, 200, ANY),
    ("admin", "GET", "usage", None, 200, ANY),
    ("service", "GET", "usage", None, 200, ANY),
    ("alice", "DELETE", "allocations/{id}", None, 204, ANY),
    ("admin", "DELETE", "allocations/{id}", None, 204, ANY),
    ("service", "DELETE", "allocations/{id}", None, 204, ANY),
    ("alice", "POST", "allocations", GPU | {"ref": "alice/other", "profile": "cpu-small"}, 201, ANY),
    ("alice", "POST", "allocations", GPU | {"user": None, "ref": "alice/x", "profile": "cpu-small"}, 201, ANY),
    ("alice", "POST", "allocations", GPU, 200, ANY),
]


@pytest.mark.parametrize("who,method,path,body,status,detail", CASES,
                         ids=[f"{c[0]} {c[1]} {c[2]} {c[4]}" for c in CASES])
async def test_authorisation(service, who, method, path, body, status, detail):
    held = await service.allocate("alice", "vision", "gpu-1", "alice/")  # an allocation of alice's
    assert held.status_code == 201, held.text
    ident = held.json()["id"]
    r = await service.call(who, method, path.format(id=ident), json=body)
    assert r.status_code == status, r.text
    if detail is not None:
        assert r.json()["detail"].startswith(detail.format(id=ident)), r.json()
