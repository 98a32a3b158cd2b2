"""Identity and ownership, tried as an ordinary user with a hub token and the documented API.

Users (see conftest): alice, erin, frank in VC vision; bob in nlp; dave in no VC; admin.
"""

from __future__ import annotations

import pytest
from jobs_helpers import py_job, wait_state

from yitong_services.vcs.models import Allocation

FAST = {"jobs": {"poll_interval": 0.1}}
ACT_ONLY_AS_SELF = "acts only as themself"


@pytest.fixture
async def svc(service_factory):
    async with service_factory(**FAST) as s:
        yield s


@pytest.mark.parametrize("named", ["bob", "no-such-user"])
async def test_a_person_cannot_submit_as_someone_else(svc, named):
    """Impersonation: `user` in the body is refused for people, with a sentence that does not
    depend on whether the named user exists, and nothing is queued."""
    body = py_job("sneak", "nlp", "print(1)") | {"user": named}
    r = await svc.call("alice", "POST", "jobs", json=body)
    assert r.status_code == 403 and ACT_ONLY_AS_SELF in r.json()["detail"], r.text
    assert named not in r.json()["detail"].replace("alice", "")
    assert (await svc.call("admin", "GET", "jobs")).json() == []


@pytest.mark.parametrize("body_user", [5, ["bob"], {"name": "bob"}])
async def test_a_user_field_of_the_wrong_type_is_a_422(svc, body_user):
    r = await svc.call("admin", "POST", "jobs", json=py_job("t", "vision", "print(1)") | {"user": body_user})
    assert r.status_code == 422 and "user" in r.json()["detail"], r.text


async def test_another_vc_answers_like_an_unknown_one(svc):
    """A VC, job, profile the caller may not see is a 404 with the same sentence as a missing one."""
    for vc in ("vision", "no-such-vc"):
        r = await svc.call("bob", "POST", "jobs", json=py_job("x", vc, "print(1)"))
        assert (r.status_code, r.json()["detail"]) == (404, f"there is no VC {vc}"), r.text
        r = await svc.call("bob", "GET", f"vcs/{vc}")
        assert (r.status_code, r.json()["detail"]) == (404, f"there is no VC {vc}"), r.text
        r = await svc.call("bob", "POST", "datasets", json={"vc": vc, "name": "d1"})
        assert r.status_code == 404 and r.json()["detail"] == f"there is no VC {vc}", r.text
        r = await svc.call("bob", "POST", "allocations", json={"vc": vc, "profile": "cpu-small", "ref": "bob/"})
        assert r.status_code == 404 and r.json()["detail"] == f"there is no VC {vc}", r.text
    job = (await svc.call("alice", "POST", "jobs", json=py_job("mine", "vision", "print(1)"))).json()
    for job_id in (job["id"], job["id"] + 1000):
        r = await svc.call("bob", "GET", f"jobs/{job_id}")
        assert (r.status_code, r.json()["detail"]) == (404, f"there is no job {job_id}")
        r = await svc.call("bob", "POST", f"jobs/{job_id}/cancel")
        assert (r.status_code, r.json()["detail"]) == (404, f"there is no job {job_id}")


async def test_an_admin_acting_for_someone_is_audited(svc):
    r = await svc.call(
        "admin",
        "POST",
        "jobs",
        json=py_job("for-alice", "vision", "print(1)") | {"user": "alice"},
        headers={"X-Forwarded-For": "203.0.113.7"},
    )
    assert r.status_code == 201 and r.json()["user"] == "alice", r.text
    r = await svc.call("admin", "PATCH", "vcs/vision", json={"description": "changed"})
    assert r.status_code == 200, r.text
    # the platform's own token (the hub's spawner) is the platform, not audited
    assert (await svc.allocate("alice", "vision", "cpu-small", "alice/")).status_code == 201
    assert (await svc.call("alice", "GET", "audit")).status_code == 403
    log = (await svc.call("admin", "GET", "audit")).json()
    assert log["total"] == 2
    patch, submit = log["items"]
    assert (patch["actor"], patch["action"], patch["target"]) == ("admin", "vc.patch", "vc vision")
    assert patch["detail"] == {"description": "changed"}
    assert (submit["actor"], submit["action"], submit["on_behalf_of"]) == ("admin", "job.submit", "alice")
    assert submit["source"].startswith("203.0.113.7 via ")
    only = (await svc.call("admin", "GET", "audit?action=vc.patch")).json()
    assert [e["action"] for e in only["items"]] == ["vc.patch"]


async def test_people_cannot_book_or_drop_job_allocations(svc):
    """Quota bypass and allocation forgery: `kind: job` is the admission queue's alone, and a
    running job's allocation cannot be released by its owner."""
    r = await svc.allocate("alice", "vision", "cpu-small", "999", kind="job", who="alice")
    assert r.status_code == 403 and "submit a job instead" in r.json()["detail"], r.text
    r = await svc.call("alice", "POST", "jobs", json=py_job("sleepy", "vision", "import time; time.sleep(30)"))
    job_id = r.json()["id"]
    await wait_state(svc, "alice", job_id, {"running"})
    [held] = [a for a in (await svc.call("alice", "GET", "allocations")).json() if a["kind"] == "job"]
    r = await svc.call("alice", "DELETE", f"allocations/{held['id']}")
    assert r.status_code == 409 and "cancel the job instead" in r.json()["detail"], r.text
    r = await svc.call("bob", "DELETE", f"allocations/{held['id']}")
    assert (r.status_code, r.json()["detail"]) == (404, f"there is no allocation {held['id']}")
    assert any(a["id"] == held["id"] for a in (await svc.call("admin", "GET", "allocations")).json())
    await svc.call("alice", "POST", f"jobs/{job_id}/cancel")
    await wait_state(svc, "alice", job_id)


async def test_a_foreign_job_allocation_row_does_not_stop_admission(svc):
    """One bad row (here written straight into the database) never halts admission for others."""
    r = await svc.call("bob", "POST", "jobs", json=py_job("first", "nlp", "print(1)"))
    first = r.json()["id"]
    await wait_state(svc, "bob", first)
    with svc.ctx.db.writing() as s:
        s.add(Allocation(user="bob", vc="nlp", profile="job", kind="job", ref=str(first + 1), resources={}))
    r = await svc.call("alice", "POST", "jobs", json=py_job("second", "vision", "print(2)"))
    assert r.json()["id"] == first + 1
    job = await wait_state(svc, "alice", first + 1)
    assert job["state"] == "succeeded", job


async def test_allocation_ids_are_never_reused(svc):
    """SQLite would hand out a deleted last row's id again: stopping your own server must never
    be able to delete another user's later allocation."""
    first = (await svc.allocate("alice", "vision", "cpu-small", "alice/")).json()["id"]
    assert (await svc.call("service", "DELETE", f"allocations/{first}")).status_code == 204
    second = (await svc.allocate("erin", "vision", "cpu-small", "erin/")).json()["id"]
    assert second > first
    r = await svc.call("alice", "DELETE", f"allocations/{first}")
    assert r.status_code == 404
    assert [a["id"] for a in (await svc.call("admin", "GET", "allocations")).json()] == [second]


async def test_concurrent_writes_never_surface_database_locked(svc):
    """Allocations made and released at once, VC edits and job submits meanwhile: every answer is
    a success or a 4xx with a sentence, never "database is locked" (SQLite leg) or another 5xx."""
    import asyncio

    async def churn(i: int) -> list[int]:
        user = ("alice", "erin", "frank")[i % 3]
        made = await svc.allocate(user, "vision", "cpu-small", f"{user}/c{i}")
        codes = [made.status_code]
        if made.status_code in (200, 201):
            codes.append((await svc.call("service", "DELETE", f"allocations/{made.json()['id']}")).status_code)
        codes.append((await svc.call("admin", "PATCH", "vcs/vision", json={"description": f"d{i}"})).status_code)
        codes.append((await svc.call(user, "POST", "jobs", json=py_job(f"c{i}", "vision", "print(1)"))).status_code)
        return codes

    results = await asyncio.gather(*(churn(i) for i in range(30)))
    codes = [c for r in results for c in r]
    assert all(c < 500 for c in codes), codes
    assert codes.count(204) == sum(1 for r in results if r[0] in (200, 201))
