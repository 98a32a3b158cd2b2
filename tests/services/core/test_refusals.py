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
    (
        "service",
        "POST",
        "allocations",
        {**GPU, "vc": "nlp", "user": "bob", "profile": "ascend-1", "ref": "bob/"},
        422,
        "VC nlp does not offer profile ascend-1",
    ),
    ("service", "POST", "allocations", GPU | {"colour": "red"}, 422, "colour: unknown field"),
    ("service", "POST", "allocations", GPU | {"ref": "bob/"}, 422, "ref of a server must be 'alice/<server name>'"),
    (
        "service",
        "POST",
        "allocations",
        GPU | {"profile": "cpu-small"},
        409,
        "server alice/ already holds allocation {id} (alice, VC vision, profile gpu-1); release it first",
    ),
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


@pytest.mark.parametrize(
    "who,method,path,body,status,detail", CASES, ids=[f"{c[0]} {c[1]} {c[2]} {c[4]}" for c in CASES]
)
async def test_authorisation(service, who, method, path, body, status, detail):
    held = await service.allocate("alice", "vision", "gpu-1", "alice/")  # an allocation of alice's
    assert held.status_code == 201, held.text
    ident = held.json()["id"]
    r = await service.call(who, method, path.format(id=ident), json=body)
    assert r.status_code == status, r.text
    if detail is not None:
        assert r.json()["detail"].startswith(detail.format(id=ident)), r.json()


# Inputs (issue 8, point 7): each of these was a 500 or was accepted; now a 4xx with a sentence, and
# nothing is queued. Bodies are raw bytes so that exactly what is listed reaches the service.
SPEC = '{"name": "x", "vc": "vision", "environment": {"kernel": "python3"}, "command": ["true"]%s}'
JSON = {"Content-Type": "application/json"}
YAML = {"Content-Type": "application/yaml"}
BOMB = "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b]\n"
INPUTS = [
    (
        "POST",
        "jobs",
        (SPEC % ', "env": {"A": "%s"}' % ("x" * 30_000_000)).encode(),
        JSON,
        413,
        "the request body of 28.6 MiB exceeds the 1 MiB limit (service.limits.max_body_bytes)",
    ),
    (
        "POST",
        "jobs",
        (SPEC % ', "env": {"A": "%s"}' % ("x" * 70_000)).encode(),
        JSON,
        422,
        "spec.env: A: the value is longer than 65536 characters",
    ),
    (
        "POST",
        "jobs",
        ("[" * 100_000 + "]" * 100_000).encode(),
        JSON,
        422,
        "spec nests lists and maps deeper than 32 levels",
    ),
    (
        "POST",
        "jobs",
        (SPEC % (', "code": ' + "[" * 40 + "]" * 40)).encode(),
        JSON,
        422,
        "spec nests lists and maps deeper than 32 levels",
    ),
    (
        "POST",
        "jobs",
        ("a: " + "[" * 100_000 + "]" * 100_000).encode(),
        YAML,
        422,
        "spec: not valid YAML at line 1, column 35: lists and maps nest deeper than 32 levels",
    ),
    (
        "POST",
        "jobs",
        BOMB.encode(),
        YAML,
        422,
        "spec: not valid YAML at line 2, column 8: aliases (*name) are not accepted; write the value out",
    ),
    (
        "POST",
        "jobs",
        b"name: x\nvc: vision\nenvironment: {kernel: python3}\ncommand: [a]\nname: y\n",
        YAML,
        422,
        "spec: not valid YAML at line 5, column 1: the key 'name' is given twice in one map (first at line 1)",
    ),
    ("POST", "jobs", (SPEC % ', "vc": "nlp"').encode(), JSON, 422, "spec: the key 'vc' is given twice in one object"),
    (
        "POST",
        "vcs",
        ('{"name": "%s"}' % ("n" * 10_000)).encode(),
        JSON,
        422,
        f"name: '{'n' * 78}… (10002 characters) is not a valid name",
    ),
    ("POST", "jobs", (SPEC % ', "user": 5').encode(), JSON, 422, "user: must be a user name"),
    ("POST", "jobs", b"\xff\xfe name: x", YAML, 422, "spec: the body is not UTF-8 text (byte 0)"),
    (
        "POST",
        "jobs",
        (SPEC % "").encode().replace(b'["true"]', b'"' + b"y" * 70_000 + b'"'),
        JSON,
        422,
        "spec.command: is longer than 65536 characters",
    ),
    ("POST", f"jobs/{2**64}/clone", b"{}", JSON, 422, "path.job_id: Input should be less than or equal to"),
    ("GET", f"jobs/{2**63}", None, {}, 422, "path.job_id: Input should be less than or equal to"),
    ("GET", f"runs/{2**70}", None, {}, 422, "path.run_id: Input should be less than or equal to"),
    ("GET", "jobs/0/logs?offset=99999999999999999999999", None, {}, 422, "path.job_id: Input should be greater than"),
    ("POST", "storage/gc?grace=1e300", None, {}, 422, "query.grace: Input should be less than or equal to"),
    (
        "POST",
        "vcs",
        ('{"name": "big", "description": "%s"}' % ("d" * 20_000_000)).encode(),
        JSON,
        413,
        "the request body of 19.1 MiB exceeds the 1 MiB limit (service.limits.max_body_bytes)",
    ),
    (
        "POST",
        "vcs",
        ('{"name": "big", "description": "%s"}' % ("d" * 5000)).encode(),
        JSON,
        422,
        "description: String should have at most 4096 characters",
    ),
    (
        "POST",
        "datasets",
        ('{"vc": "vision", "name": "d", "description": "%s"}' % ("d" * 5000)).encode(),
        JSON,
        422,
        "description: String should have at most 4096 characters",
    ),
    ("GET", f"datasets/vision/none/versions/{2**64}", None, {}, 404, "there is no dataset vision/none"),
]


@pytest.mark.parametrize(
    "method,path,body,headers,status,detail", INPUTS, ids=[f"{m} {p[:30]} {s} {d[:40]}" for m, p, _, _, s, d in INPUTS]
)
async def test_inputs_refused(service, method, path, body, headers, status, detail):
    who = "admin"
    r = await service.call(who, method, path, content=body, headers=headers)
    assert r.status_code == status, r.text[:500]
    assert r.json()["detail"].startswith(detail), r.json()["detail"][:500]
    assert (await service.call("admin", "GET", "jobs")).json() == []  # nothing queued


async def test_chunked_body_refused_while_streaming(service):
    async def chunks():  # no Content-Length: counted as it arrives
        yield b'{"name": "x", "env": {"A": "'
        for _ in range(40):
            yield b"x" * 65536
        yield b'"}}'

    r = await service.call("alice", "POST", "jobs", content=chunks(), headers=JSON)
    assert r.status_code == 413, r.text
    assert r.json()["detail"] == "the request body exceeds the 1 MiB limit (service.limits.max_body_bytes)"
    assert (await service.call("admin", "GET", "jobs")).json() == []


async def test_version_ref_beyond_int64_is_not_a_number(service):
    await service.data.create("alice", "vision/refs")
    for ref in (str(2**64), "v" + str(2**64), "²"):
        r = await service.call("alice", "GET", f"datasets/vision/refs/versions/{ref}")
        assert r.status_code == 404 and r.json()["detail"] == f"dataset vision/refs has no version or tag {ref}", r.text
