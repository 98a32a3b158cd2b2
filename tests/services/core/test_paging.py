"""Paged lists and conditional GETs (core/paging.py): the pure envelope, and ``GET /jobs`` /
``GET /jobs/{id}`` through the real service (ASGI) against the real hub."""

from __future__ import annotations

import pytest
from jobs_helpers import py_job

from yitong_services.core.paging import MAX_LIMIT, PAGINATION_MEDIA, Page, envelope, etag_of

ENVELOPE = {"Accept": PAGINATION_MEDIA}


@pytest.mark.parametrize(
    ("items", "total", "page", "next_"),
    [
        ([1, 2], 5, Page(0, 2), {"offset": 2, "limit": 2}),
        ([5], 5, Page(4, 2), None),
        ([], 5, Page(9, 2), None),
        ([], 0, Page(0, MAX_LIMIT), None),
    ],
)
def test_envelope(items, total, page, next_):
    out = envelope(items, total, page)
    assert out == {
        "items": items,
        "_pagination": {"offset": page.offset, "limit": page.limit, "total": total, "next": next_},
    }


def test_etag_is_strong_and_stable():
    assert etag_of(b"[1]") == etag_of(b"[1]") != etag_of(b"[2]")
    assert etag_of(b"[1]").startswith('"') and etag_of(b"[1]").endswith('"')


@pytest.fixture
async def svc(service_factory):
    # no job runs: the jobs stay queued, so queue positions are part of every answer
    async with service_factory(jobs={"enabled": False}) as s:
        yield s


async def submit_many(svc, who: str, vc: str, n: int) -> list[int]:
    ids = []
    for i in range(n):
        r = await svc.call(who, "POST", "jobs", json=py_job(f"p{i}", vc, "0"))
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    return ids


async def test_jobs_paged_like_the_hub(svc):
    ids = await submit_many(svc, "alice", "vision", 5)
    await submit_many(svc, "bob", "nlp", 2)  # another VC: never counted for alice

    plain = await svc.call("alice", "GET", "jobs")
    assert [j["id"] for j in plain.json()] == ids[::-1]  # unpaged: the plain list, newest first
    assert plain.headers["X-Total-Count"] == "5"
    # fair order over VCs: alice 1, bob 2, alice 3, bob 4, then alice 5, 6, 7
    assert [j["position"] for j in plain.json()] == [7, 6, 5, 3, 1]

    r = await svc.call("alice", "GET", "jobs?offset=1&limit=2", headers=ENVELOPE)
    body = r.json()
    assert [j["id"] for j in body["items"]] == ids[::-1][1:3]
    assert body["_pagination"] == {"offset": 1, "limit": 2, "total": 5, "next": {"offset": 3, "limit": 2}}
    last = (await svc.call("alice", "GET", "jobs?offset=3&limit=2", headers=ENVELOPE)).json()
    assert [j["id"] for j in last["items"]] == ids[::-1][3:] and last["_pagination"]["next"] is None

    admin = (await svc.call("admin", "GET", "jobs?limit=1", headers=ENVELOPE)).json()
    assert admin["_pagination"]["total"] == 7 and len(admin["items"]) == 1


@pytest.mark.parametrize(
    "query",
    ["limit=0", f"limit={MAX_LIMIT + 1}", "offset=-1", "limit=x", "vc=" + "v" * 65, "state=" + "s" * 17],
)
async def test_paging_refusals_are_4xx_with_a_sentence(svc, query):
    r = await svc.call("alice", "GET", f"jobs?{query}")
    assert r.status_code == 422, r.text
    assert r.json()["detail"]


async def test_etag_and_304(svc):
    [job_id] = await submit_many(svc, "alice", "vision", 1)
    for path in ("jobs", f"jobs/{job_id}", "jobs?limit=1"):
        first = await svc.call("alice", "GET", path)
        etag = first.headers["ETag"]
        again = await svc.call("alice", "GET", path, headers={"If-None-Match": etag})
        assert (again.status_code, again.content, again.headers["ETag"]) == (304, b"", etag)
        other = await svc.call("alice", "GET", path, headers={"If-None-Match": '"stale"'})
        assert other.status_code == 200 and other.json() == first.json()
    # a change (a new job moves the list; cancelling changes the job) gives a new tag
    list_tag = (await svc.call("alice", "GET", "jobs")).headers["ETag"]
    job_tag = (await svc.call("alice", "GET", f"jobs/{job_id}")).headers["ETag"]
    await submit_many(svc, "alice", "vision", 1)
    assert (await svc.call("alice", "GET", "jobs", headers={"If-None-Match": list_tag})).status_code == 200
    assert (await svc.call("alice", "POST", f"jobs/{job_id}/cancel")).status_code == 202
    r = await svc.call("alice", "GET", f"jobs/{job_id}", headers={"If-None-Match": job_tag})
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    # another person's tag tells them nothing: the job is still a 404
    r = await svc.call("bob", "GET", f"jobs/{job_id}", headers={"If-None-Match": job_tag})
    assert r.status_code == 404
