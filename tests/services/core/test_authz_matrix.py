"""The authorization matrix, generated from the route table: every route of the service x
anonymous / member of the VC / member of another VC / admin, with the expected status.

A route without an entry in ``MATRIX`` (or in ``COVERED_ELSEWHERE``, for the dataset routes
that ``test_dataset_authz.py`` tables per dataset visibility) fails ``test_every_route_has_an_entry``:
a new route cannot land without saying who may call it.

Each role acts on its own fresh objects, made before the calls, so one role's delete does not
change what the next one sees: VC ``t-<role>`` (hub group ``vision``: alice is a member, bob is
not) offering profile ``p-<role>``; alice's server allocation ``alice/<role>`` in VC vision;
alice's failed job ``j-<role>`` in VC vision and its run; an SSH key of alice's; alice's model
``t-<role>/p-<role>`` with version 1 and alias ``prod``; alert rule ``p-<role>`` and an email route.
"""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute
from jobs_helpers import py_job, wait_state
from ssh_helpers import public_line

PREFIX = "/services/yitong/"
ROLES = {"anonymous": None, "member": "alice", "other": "bob", "admin": "admin"}
FAST = {"jobs": {"poll_interval": 0.1}}

# (method, path as in the route table) -> (body or None, {role: status})
A = 401  # anonymous, everywhere but /health


def row(member: int, other: int, admin: int, anonymous: int = A) -> dict[str, int]:
    return {"anonymous": anonymous, "member": member, "other": other, "admin": admin}


ALL = row(200, 200, 200)
ADMIN_ONLY = row(403, 403, 200)
MEMBER_SEES = row(200, 404, 200)
QUOTA = {"cpu": 1, "memory": "1Gi"}
EXPERIMENT = {
    "name": "e-{role}",
    "vc": "vision",
    "space": {"x": {"_type": "uniform", "_value": [0, 1]}},
    "max_trials": 1,
    "template": {k: v for k, v in py_job("t", "vision", "print(1)").items() if k not in ("name", "vc")},
}

MATRIX: dict[tuple[str, str], tuple[object, dict[str, int]]] = {
    ("GET", "api/v1/health"): (None, row(200, 200, 200, anonymous=200)),
    ("GET", "api/v1/me"): (None, ALL),
    ("GET", "api/v1/vcs"): (None, ALL),
    ("POST", "api/v1/vcs"): ({"name": "n-{role}", "quota": QUOTA, "groups": ["vision"]}, row(403, 403, 201)),
    ("GET", "api/v1/vcs/{vc}"): (None, MEMBER_SEES),
    ("PATCH", "api/v1/vcs/{vc}"): ({"description": "x"}, ADMIN_ONLY),
    # the VC holds alice's model (its backing dataset): the admin passes and meets the 409 check
    ("DELETE", "api/v1/vcs/{vc}"): (None, row(403, 403, 409)),
    ("GET", "api/v1/profiles"): (None, ALL),
    # admin only; an unknown VC is refused before the hub is asked (test_console.py adds a real person)
    ("POST", "api/v1/people"): ({"name": "n-{role}", "vcs": ["no-such-vc"]}, row(403, 403, 404)),
    ("POST", "api/v1/profiles"): ({"name": "q-{role}", "cpu": 1, "memory": "1Gi"}, row(403, 403, 201)),
    ("GET", "api/v1/profiles/{name}"): (None, MEMBER_SEES),
    ("PATCH", "api/v1/profiles/{name}"): ({"cpu": 1}, ADMIN_ONLY),
    # the admin reaches the catalogue: 409 because VC t-admin still offers the profile
    ("DELETE", "api/v1/profiles/{name}"): (None, row(403, 403, 409)),
    ("GET", "api/v1/spawn-options"): (None, ALL),
    ("POST", "api/v1/allocations"): ({"vc": "vision", "profile": "cpu-small", "ref": "{user}/new"}, row(201, 404, 201)),
    ("GET", "api/v1/allocations"): (None, ALL),
    ("DELETE", "api/v1/allocations/{allocation_id}"): (None, row(204, 404, 204)),
    ("GET", "api/v1/usage"): (None, ADMIN_ONLY),
    ("POST", "api/v1/jobs"): (py_job("new", "vision", "print(1)"), row(201, 404, 201)),
    ("POST", "api/v1/jobs/preview"): (py_job("new", "vision", "print(1)"), row(200, 404, 200)),
    ("GET", "api/v1/jobs"): (None, ALL),
    ("GET", "api/v1/jobs/{job_id}"): (None, MEMBER_SEES),
    ("GET", "api/v1/jobs/events"): (None, ALL),
    # the job has failed already: owner and admin reach the state check (409), others see nothing
    ("POST", "api/v1/jobs/{job_id}/cancel"): (None, row(409, 404, 409)),
    ("POST", "api/v1/jobs/{job_id}/retry"): (None, MEMBER_SEES),
    ("POST", "api/v1/jobs/{job_id}/clone"): ({"patch": {}}, row(201, 404, 201)),
    # only the job's own token may post its metrics; no person's token is one
    ("POST", "api/v1/jobs/{job_id}/metrics"): ({"acc": 1}, row(401, 401, 401)),
    ("GET", "api/v1/jobs/{job_id}/logs"): (None, MEMBER_SEES),
    ("GET", "api/v1/runs/{run_id}"): (None, MEMBER_SEES),
    ("POST", "api/v1/runs/{run_id}/rerun"): (None, row(201, 404, 201)),
    ("POST", "api/v1/experiments"): (EXPERIMENT, row(201, 404, 201)),
    ("GET", "api/v1/experiments"): (None, ALL),
    ("GET", "api/v1/experiments/{experiment_id}"): (None, MEMBER_SEES),
    ("GET", "api/v1/experiments/{experiment_id}/importance"): (None, MEMBER_SEES),
    # the experiment was stopped when made: owner and admin reach the state check (409)
    ("POST", "api/v1/experiments/{experiment_id}/stop"): (None, row(409, 404, 409)),
    ("POST", "api/v1/experiments/{experiment_id}/resume"): (None, MEMBER_SEES),
    ("POST", "api/v1/experiments/{experiment_id}/extend"): ({"trials": 1}, MEMBER_SEES),
    ("POST", "api/v1/experiments/{experiment_id}/clone"): ({"patch": {}}, row(201, 404, 201)),
    # only the trial job's own token may report; no person's token is one
    ("POST", "api/v1/experiments/trials/{job_id}/report"): ({"type": "final", "value": 1}, row(401, 401, 401)),
    ("GET", "api/v1/models"): (None, ALL),
    ("POST", "api/v1/models"): ({"vc": "vision", "name": "m-{role}"}, row(201, 404, 201)),
    ("GET", "api/v1/models/{vc}/{name}"): (None, MEMBER_SEES),
    ("PATCH", "api/v1/models/{vc}/{name}"): ({"description": "x"}, MEMBER_SEES),
    ("DELETE", "api/v1/models/{vc}/{name}"): (None, row(204, 404, 204)),
    ("POST", "api/v1/models/{vc}/{name}/versions"): ({"files": []}, row(201, 404, 201)),
    ("GET", "api/v1/models/{vc}/{name}/versions"): (None, MEMBER_SEES),
    ("GET", "api/v1/models/{vc}/{name}/versions/{ref}"): (None, MEMBER_SEES),
    ("DELETE", "api/v1/models/{vc}/{name}/versions/{ref}"): (None, row(204, 404, 204)),
    ("PUT", "api/v1/models/{vc}/{name}/aliases/{alias}"): ({"version": 1}, MEMBER_SEES),
    ("DELETE", "api/v1/models/{vc}/{name}/aliases/{alias}"): (None, row(204, 404, 204)),
    ("GET", "api/v1/models/{vc}/{name}/compare"): (None, MEMBER_SEES),
    # the version has no framework: members reach the framework check (422), others see nothing
    ("POST", "api/v1/models/{vc}/{name}/versions/{ref}/batch"): (
        {"input": "t-{role}/x", "output": "t-{role}/out"},
        row(422, 404, 422),
    ),
    # alice's job is no batch job: nobody gets more than 404 (a batch job per role, its commit and
    # bob's 404 on it: tests/services/models/test_batch.py)
    ("GET", "api/v1/batch/{job_id}"): (None, row(404, 404, 404)),
    ("POST", "api/v1/batch/{job_id}/commit"): ({"files": []}, row(404, 404, 404)),
    ("GET", "api/v1/endpoints"): (None, ALL),
    # the model's version has no framework: members reach the runtime check (422), others see nothing
    ("POST", "api/v1/endpoints"): (
        {"name": "e-{role}", "model": "t-{role}/p-{role}", "profile": "cpu-small"},
        row(422, 404, 422),
    ),
    # per-endpoint keys: admins only, checked before the endpoint is looked up (p-<role> is no
    # endpoint here: the admin passes and meets the 404; issued, used and revoked against a
    # running endpoint in tests/services/models/test_v2_conformance.py)
    ("GET", "api/v1/endpoints/{name}/keys"): (None, row(403, 403, 404)),
    ("POST", "api/v1/endpoints/{name}/keys"): ({"note": "n-{role}"}, row(403, 403, 404)),
    ("DELETE", "api/v1/endpoints/{name}/keys/{key_id}"): (None, row(403, 403, 404)),
    # scaling: the endpoint is looked up first (p-<role> is no endpoint here: 404 for all); the
    # owner 200, another VC's person 404, against running replicas in tests/services/models/test_endpoints.py
    ("POST", "api/v1/endpoints/{name}/scale"): ({"replicas": 2}, row(404, 404, 404)),
    ("GET", "api/v1/audit"): (None, ADMIN_ONLY),
    # keys are the caller's own: nobody, admins included, reaches another person's
    ("GET", "api/v1/me/ssh-keys"): (None, ALL),
    ("POST", "api/v1/me/ssh-keys"): ({"key": public_line()}, row(201, 201, 201)),
    ("DELETE", "api/v1/me/ssh-keys/{key_id}"): (None, row(204, 404, 404)),
    ("GET", "api/v1/ssh"): (None, ALL),
    ("GET", "metrics"): (None, ADMIN_ONLY),
    ("GET", "api/v1/dashboard"): (None, ADMIN_ONLY),
    ("POST", "api/v1/nodes/report"): ({"name": "n-{role}", "allocatable": {"cpu": 4}}, row(403, 403, 204)),
    ("GET", "api/v1/logs"): (None, ADMIN_ONLY),
    # everyone sees the policy and their own servers' decisions (tests/services/ops/test_reclaim.py)
    ("GET", "api/v1/reclaim"): (None, ALL),
    # each caller's own pending warnings only (tests/services/ops/test_reclaim.py)
    ("GET", "api/v1/reclaim/warnings"): (None, ALL),
    # alerts: admins only; the rule p-<role> and route of each role exist; Alertmanager is not
    # running in these tests, so the admin's silence calls meet the 409 that says so
    ("GET", "api/v1/alerts/status"): (None, ADMIN_ONLY),
    ("GET", "api/v1/alerts/rules"): (None, ADMIN_ONLY),
    ("POST", "api/v1/alerts/rules"): ({"name": "r-{role}", "kind": "service_down"}, row(403, 403, 201)),
    ("GET", "api/v1/alerts/rules/{name}"): (None, ADMIN_ONLY),
    ("PATCH", "api/v1/alerts/rules/{name}"): ({"description": "x"}, ADMIN_ONLY),
    ("DELETE", "api/v1/alerts/rules/{name}"): (None, row(403, 403, 204)),
    ("GET", "api/v1/alerts/routes"): (None, ADMIN_ONLY),
    ("POST", "api/v1/alerts/routes"): ({"emails": ["ops@example.com"]}, row(403, 403, 201)),
    ("DELETE", "api/v1/alerts/routes/{route_id}"): (None, row(403, 403, 204)),
    ("GET", "api/v1/alerts/silences"): (None, row(403, 403, 409)),
    ("POST", "api/v1/alerts/silences"): ({"matchers": {"vc": "x"}, "comment": "c"}, row(403, 403, 409)),
    ("DELETE", "api/v1/alerts/silences/{silence_id}"): (None, row(403, 403, 409)),
    ("GET", "api/v1/alerts/history"): (None, ADMIN_ONLY),
    # only Alertmanager, with the per-install secret; no person's token is it
    ("POST", "api/v1/alerts/webhook"): ({"alerts": []}, row(401, 401, 401)),
}

# query strings some calls need: the event stream ends at once instead of after 5 minutes
QUERY = {("GET", "api/v1/jobs/events"): "?seconds=0"}

# the admin console's HTML pages: admin / user (403) / anonymous (302) in tests/services/ops/test_console_pages.py
CONSOLE_PAGES = {
    ("GET", "console"),
    ("GET", "console/people"),
    ("GET", "console/dashboard"),
    ("GET", "console/logs"),
    ("GET", "console/vcs/{name}"),
    ("GET", "console/profiles/{name}"),
}

# Dataset, object and storage routes: tabled per role and per dataset visibility in
# test_dataset_authz.py (DATASET_ROUTES, GLOBAL_ROUTES); the browser pages in test_pages.py.
COVERED_ELSEWHERE = {
    ("GET", "api/v1/datasets"),
    ("POST", "api/v1/datasets"),
    ("GET", "api/v1/datasets/{vc}/{name}"),
    ("PATCH", "api/v1/datasets/{vc}/{name}"),
    ("DELETE", "api/v1/datasets/{vc}/{name}"),
    ("PUT", "api/v1/datasets/{vc}/{name}/tags/{tag}"),
    ("DELETE", "api/v1/datasets/{vc}/{name}/tags/{tag}"),
    ("POST", "api/v1/datasets/{vc}/{name}/versions"),
    ("GET", "api/v1/datasets/{vc}/{name}/versions"),
    ("GET", "api/v1/datasets/{vc}/{name}/versions/{ref}"),
    ("DELETE", "api/v1/datasets/{vc}/{name}/versions/{ref}"),
    ("GET", "api/v1/datasets/{vc}/{name}/diff"),
    ("GET", "api/v1/datasets/{vc}/{name}/versions/{ref}/manifest"),
    ("GET", "api/v1/datasets/{vc}/{name}/versions/{ref}/objects/{hash}"),
    ("POST", "api/v1/datasets/{vc}/{name}/versions/{ref}/fetch"),
    ("POST", "api/v1/datasets/{vc}/{name}/versions/{ref}/materialize"),
    ("POST", "api/v1/objects/missing"),
    ("POST", "api/v1/objects/pack"),
    ("HEAD", "api/v1/objects/{hash}/upload"),
    ("PATCH", "api/v1/objects/{hash}/upload"),
    ("POST", "api/v1/storage/gc"),
    ("POST", "api/v1/storage/verify"),
    ("GET", "admin"),
    ("GET", "oauth_callback"),
    *CONSOLE_PAGES,
    # a running endpoint needs MLServer: tabled per role in tests/services/models/test_endpoints.py
    # (with its /v2/... pass-through, which is kept out of the OpenAPI document)
    ("GET", "api/v1/endpoints/{name}"),
    ("DELETE", "api/v1/endpoints/{name}"),
    ("POST", "api/v1/endpoints/{name}/deploy"),  # the roll: alice 200, bob 404 (test_endpoints.py)
}


HIDDEN = {("GET", "metrics"), ("GET", "admin"), ("GET", "oauth_callback"), *CONSOLE_PAGES}  # include_in_schema=False


def route_table(app) -> set[tuple[str, str]]:
    """Every (method, path) the app serves: the OpenAPI document's operations, the routes kept
    out of it (``HIDDEN``, checked to exist by the calls in this file and test_pages.py)."""
    out = set(HIDDEN)
    for path, operations in app.openapi()["paths"].items():
        for method in operations:
            if method in ("get", "post", "put", "patch", "delete", "head"):
                out.add((method.upper(), path[len(PREFIX) :]))
    for route in app.routes:  # routes declared on the app itself
        if isinstance(route, APIRoute) and route.path.startswith(PREFIX):
            out.update((m, route.path[len(PREFIX) :]) for m in route.methods)
    return out


async def test_every_route_has_an_entry(service):
    routes = route_table(service.app)
    missing = sorted(routes - set(MATRIX) - COVERED_ELSEWHERE)
    assert not missing, f"routes without an entry in the authorization matrix: {missing}"
    stale = sorted((set(MATRIX) | COVERED_ELSEWHERE) - routes)
    assert not stale, f"matrix entries for routes that no longer exist: {stale}"


async def _objects(svc, role: str) -> dict[str, object]:
    """Fresh objects for one role (made by admin and alice, whoever the role is)."""
    r = await svc.call("admin", "POST", "profiles", json={"name": f"p-{role}", "cpu": 1, "memory": "1Gi"})
    assert r.status_code == 201, r.text
    r = await svc.call(
        "admin",
        "POST",
        "vcs",
        json={"name": f"t-{role}", "quota": QUOTA, "groups": ["vision"], "profiles": [f"p-{role}"]},
    )
    assert r.status_code == 201, r.text
    alloc = await svc.allocate("alice", "vision", "cpu-small", f"alice/{role}")
    assert alloc.status_code == 201, alloc.text
    job = (await svc.call("alice", "POST", "jobs", json=py_job(f"j-{role}", "vision", "raise SystemExit(3)"))).json()
    job = await wait_state(svc, "alice", job["id"])
    assert job["state"] == "failed", job
    key = await svc.call("alice", "POST", "me/ssh-keys", json={"key": public_line()})
    assert key.status_code == 201, key.text
    exp = await svc.call("alice", "POST", "experiments", json=_fill(EXPERIMENT, role=role))
    assert exp.status_code == 201, exp.text
    stopped = await svc.call("alice", "POST", f"experiments/{exp.json()['id']}/stop")
    assert stopped.status_code == 200, stopped.text
    # alice's model t-<role>/p-<role> with version 1 and alias prod
    r = await svc.call("alice", "POST", "models", json={"vc": f"t-{role}", "name": f"p-{role}"})
    assert r.status_code == 201, r.text
    blob = f"weights of {role}".encode()
    await svc.data.upload("alice", [blob])
    url = f"models/t-{role}/p-{role}"
    r = await svc.call("alice", "POST", f"{url}/versions", json={"files": svc.data.entries({"m.bin": blob})})
    assert r.status_code == 201, r.text
    r = await svc.call("alice", "PUT", f"{url}/aliases/prod", json={"version": 1})
    assert r.status_code == 200, r.text
    # an alert rule p-<role> and an email route (admin objects)
    r = await svc.call("admin", "POST", "alerts/rules", json={"name": f"p-{role}", "kind": "service_down"})
    assert r.status_code == 201, r.text
    route = await svc.call("admin", "POST", "alerts/routes", json={"emails": [f"{role}@example.com"]})
    assert route.status_code == 201, route.text
    return {
        "route_id": route.json()["id"],
        "silence_id": "00000000-0000-4000-8000-000000000000",
        "key_id": key.json()["id"],
        "experiment_id": exp.json()["id"],
        "ref": "1",
        "alias": "prod",
        "vc": f"t-{role}",
        "name": f"p-{role}",
        "allocation_id": alloc.json()["id"],
        "job_id": job["id"],
        "run_id": job["runs"][0],
    }


def _fill(value, **names):
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {k: _fill(v, **names) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, **names) for v in value]
    return value


@pytest.fixture
async def svc(service_factory):
    async with service_factory(**FAST) as s:
        yield s


@pytest.mark.parametrize("method,path", sorted(MATRIX), ids=[f"{m} {p}" for m, p in sorted(MATRIX)])
async def test_route(svc, method, path):
    body, expected = MATRIX[(method, path)]
    objects = {role: await _objects(svc, role) for role in ROLES} if "{" in path or method != "GET" else {}
    got = {}
    for role, who in ROLES.items():
        names = {k: str(v) for k, v in objects.get(role, {}).items()}
        url = PREFIX + path.format(**names) + QUERY.get((method, path), "")
        json = _fill(body, role=role, user=who or "nobody") if body is not None else None
        r = await svc.call(who, method, url, json=json)
        got[role] = r.status_code
        if r.status_code >= 500:
            pytest.fail(f"{method} {url} as {role}: {r.status_code} {r.text}")
    assert got == expected
