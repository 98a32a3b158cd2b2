"""``Idempotency-Key`` on creates (idempotency.py): a retried submit or commit makes one object.

Real service (ASGI in-process for the API cases, uvicorn on a socket behind a real TCP proxy
for the SDK case), real hub for tokens; the job manager is off (jobs stay queued) except
where noted. The PostgreSQL leg of the concurrency tests is the lead's (``db_kind``).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC

import pytest
from jobs_helpers import py_job
from sqlalchemy import func, select

from yitong_services.core.errors import Refusal
from yitong_services.core.idempotency import parse_key, request_hash, verdict
from yitong_services.core.models import IdempotencyKey
from yitong_services.jobs.models import Job

QUIET = {"jobs": {"enabled": False}}


@pytest.fixture
async def svc(service_factory):
    async with service_factory(**QUIET) as s:
        yield s


def key() -> str:
    return str(uuid.uuid4())


async def submit(svc, who, body, k=None, path="jobs", **kw):
    headers = {"Idempotency-Key": k} if k is not None else {}
    return await svc.call(who, "POST", path, json=body, headers=headers, **kw)


def count(svc, model=Job, **where) -> int:
    with svc.ctx.db.session() as s:
        query = select(func.count()).select_from(model)
        for column, value in where.items():
            query = query.where(getattr(model, column) == value)
        return s.scalar(query)


# -- pure parts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, ok",
    [
        (None, True),
        ("a", True),
        ("x" * 255, True),
        ("0f8e-uuid with spaces ~!", True),
        ("", False),
        ("x" * 256, False),
        ("tab\there", False),
        ("caf\u00e9", False),
        ("nl\n", False),
    ],
)
def test_parse_key(value, ok):
    if ok:
        assert parse_key(value) == value
    else:
        with pytest.raises(Refusal) as info:
            parse_key(value)
        assert info.value.status == 422 and "Idempotency-Key" in info.value.detail


def test_request_hash_covers_method_path_query_and_body():
    base = request_hash("POST", "/jobs", "vc=a&from=x", b"{}")
    assert base == request_hash("post", "/jobs", "from=x&vc=a", b"{}")  # parameter order does not matter
    others = [
        request_hash("PUT", "/jobs", "vc=a&from=x", b"{}"),
        request_hash("POST", "/jobs/1/clone", "vc=a&from=x", b"{}"),
        request_hash("POST", "/jobs", "vc=b&from=x", b"{}"),
        request_hash("POST", "/jobs", "vc=a&from=x", b"{ }"),
    ]
    assert base not in others and len(set(others)) == 4


def test_verdict():
    from datetime import datetime, timedelta

    now = datetime.now(UTC)
    assert verdict("h", now - timedelta(seconds=5), "h", now, 10) == "replay"
    assert verdict("h", now - timedelta(seconds=5), "other", now, 10) == "conflict"
    assert verdict("h", now - timedelta(seconds=11), "h", now, 10) == "expired"
    assert verdict("h", now - timedelta(seconds=11), "other", now, 10) == "expired"


# -- jobs ----------------------------------------------------------------------------------------


async def test_same_key_twice_makes_one_job_and_replays_the_answer(svc):
    k, body = key(), py_job("once", "vision", "print(1)")
    first = await submit(svc, "alice", body, k)
    assert first.status_code == 201, first.text
    assert "idempotent-replayed" not in first.headers
    again = await submit(svc, "alice", body, k)
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    assert count(svc) == 1
    # without a key, the same body is a new job (what a retry did before)
    assert (await submit(svc, "alice", body)).json()["id"] != first.json()["id"]
    assert count(svc) == 2


async def test_same_key_with_another_request_is_refused(svc):
    k = key()
    assert (await submit(svc, "alice", py_job("a", "vision", "print(1)"), k)).status_code == 201
    other = await submit(svc, "alice", py_job("b", "vision", "print(1)"), k)
    assert other.status_code == 422
    assert other.json()["detail"] == (
        f"Idempotency-Key '{k}' was already used for another request "
        "(POST /jobs with other parameters); send a new key for a new request"
    )
    # the same body on another create route with the key is another request too
    clone = await submit(svc, "alice", {"patch": {}}, k, path="jobs/1/clone")
    assert clone.status_code == 422 and "already used" in clone.json()["detail"]
    # so is a different query string (?vc=)
    assert (
        await submit(svc, "alice", py_job("a", "vision", "print(1)"), k, params={"vc": "default"})
    ).status_code == 422
    assert count(svc) == 1


@pytest.mark.parametrize("bad", ["", "x" * 256, "tab\tkey"])
async def test_malformed_key_is_refused_before_anything_is_made(svc, bad):
    r = await submit(svc, "alice", py_job("a", "vision", "print(1)"), bad)
    assert r.status_code == 422
    assert r.json()["detail"].startswith("Idempotency-Key: must be 1 to 255 printable ASCII characters")
    assert count(svc) == 0


async def test_non_ascii_key_is_refused(svc):
    r = await svc.call(
        "alice",
        "POST",
        "jobs",
        json=py_job("a", "vision", "print(1)"),
        headers={"Idempotency-Key": "caf\u00e9".encode("latin-1")},
    )
    assert r.status_code == 422 and "printable ASCII" in r.json()["detail"]
    assert count(svc) == 0


async def test_concurrent_submits_with_one_key_make_one_job(svc, second_service):
    """Eight submits with one key at once, over two service instances (own engines, own process
    locks) on one database: one job; everyone gets its answer."""
    k, body = key(), py_job("race", "vision", "print(1)")
    answers = await asyncio.gather(*(submit(s, "alice", body, k) for s in [svc, second_service] * 4))
    assert {r.status_code for r in answers} == {201}, [r.text for r in answers]
    assert len({r.json()["id"] for r in answers}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in answers) == 7
    assert count(svc) == 1 and count(svc, IdempotencyKey) == 1


async def test_users_have_their_own_keys(svc):
    k = "shared-key"
    a = await submit(svc, "alice", py_job("a", "vision", "print(1)"), k)
    b = await submit(svc, "bob", py_job("b", "nlp", "print(1)"), k)
    assert (a.status_code, b.status_code) == (201, 201)
    assert (a.json()["user"], b.json()["user"]) == ("alice", "bob")
    # bob's key does not reveal or replay alice's answer, even with alice's body: a refusal of his own
    c = await submit(svc, "bob", py_job("a", "vision", "print(1)"), "another")
    assert c.status_code in (403, 404) and "idempotent-replayed" not in c.headers
    assert count(svc) == 2


async def test_a_refusal_is_not_stored(svc):
    """Decision: a refused create (4xx) stores nothing. A retry is decided again, and the key can
    carry the corrected request."""
    k = key()
    refused = await submit(svc, "alice", py_job("n", "nlp", "print(1)"), k)  # alice is not in nlp
    assert refused.status_code in (403, 404)
    again = await submit(svc, "alice", py_job("n", "nlp", "print(1)"), k)
    assert again.status_code == refused.status_code and "idempotent-replayed" not in again.headers
    assert count(svc, IdempotencyKey) == 0
    fixed = await submit(svc, "alice", py_job("n", "vision", "print(1)"), k)
    assert fixed.status_code == 201
    assert count(svc) == 1


async def test_clone_with_a_key(svc):
    job = (await submit(svc, "alice", py_job("orig", "vision", "print(1)"))).json()
    k, patch = key(), {"patch": {"name": "copy"}}
    first = await submit(svc, "alice", patch, k, path=f"jobs/{job['id']}/clone")
    again = await submit(svc, "alice", patch, k, path=f"jobs/{job['id']}/clone")
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    assert count(svc) == 2


async def test_keys_expire(service_factory):
    async with service_factory(service={"idempotency_ttl": 0.3}, **QUIET) as svc:
        k, body = key(), py_job("e", "vision", "print(1)")
        first = (await submit(svc, "alice", body, k)).json()
        await asyncio.sleep(0.4)
        later = await submit(svc, "alice", body, k)  # expired: a new job, the key stored anew
        assert later.status_code == 201 and "idempotent-replayed" not in later.headers
        assert later.json()["id"] != first["id"]
        again = await submit(svc, "alice", body, k)
        assert again.headers.get("idempotent-replayed") == "true" and again.json()["id"] == later.json()["id"]
        await asyncio.sleep(0.4)
        other = await submit(svc, "bob", py_job("b", "nlp", "print(1)"), key())  # insert sweeps expired keys
        assert other.status_code == 201
        with svc.ctx.db.session() as s:
            assert list(s.scalars(select(IdempotencyKey.user))) == ["bob"]


async def test_rerun_with_a_key(service_factory):
    from jobs_helpers import wait_state

    async with service_factory(jobs={"poll_interval": 0.1}) as svc:  # the job runs: it needs a run
        job = await wait_state(
            svc, "alice", (await submit(svc, "alice", py_job("r", "vision", "print(1)"))).json()["id"]
        )
        assert job["state"] == "succeeded", job
        k = key()
        first = await svc.call("alice", "POST", f"runs/{job['runs'][0]}/rerun", headers={"Idempotency-Key": k})
        again = await svc.call("alice", "POST", f"runs/{job['runs'][0]}/rerun", headers={"Idempotency-Key": k})
        assert (first.status_code, again.status_code) == (201, 201), first.text
        assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
        assert count(svc) == 2


# -- dataset versions ----------------------------------------------------------------------------


async def test_commit_retried_with_a_key_makes_one_version(svc):
    data = svc.data
    files = {"a.txt": b"alpha", "b.txt": b"beta"}
    await data.create("alice", "vision/idem")
    await data.upload("alice", files.values())
    body = {"message": "m", "parent": None, "files": data.entries(files)}
    k = key()
    first = await svc.call("alice", "POST", "datasets/vision/idem/versions", json=body, headers={"Idempotency-Key": k})
    assert first.status_code == 201, first.text
    again = await svc.call("alice", "POST", "datasets/vision/idem/versions", json=body, headers={"Idempotency-Key": k})
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json() and first.json()["unchanged"] is False
    # without the key, the retry is told its parent is stale (what a dropped commit used to get)
    plain = await svc.call("alice", "POST", "datasets/vision/idem/versions", json=body)
    assert plain.status_code == 409
    versions = (await svc.call("alice", "GET", "datasets/vision/idem/versions")).json()
    assert [v["number"] for v in versions] == [1]
    other = await svc.call(
        "alice", "POST", "datasets/vision/idem/versions", json={**body, "message": "x"}, headers={"Idempotency-Key": k}
    )
    assert other.status_code == 422 and "already used" in other.json()["detail"]


async def test_concurrent_commits_with_one_key_make_one_version(svc, second_service):
    data = svc.data
    files = {"c.txt": b"gamma"}
    await data.create("alice", "vision/race")
    await data.upload("alice", files.values())
    body = {"message": "m", "parent": None, "files": data.entries(files)}
    k = key()
    answers = await asyncio.gather(
        *(
            s.call("alice", "POST", "datasets/vision/race/versions", json=body, headers={"Idempotency-Key": k})
            for s in [svc, second_service] * 3
        )
    )
    assert {r.status_code for r in answers} == {201}, [r.text for r in answers]
    assert len({r.json()["number"] for r in answers}) == 1
    versions = (await svc.call("alice", "GET", "datasets/vision/race/versions")).json()
    assert [v["number"] for v in versions] == [1]


# -- allocations: idempotent by (kind, ref) ---------------------------------------------------------


async def test_a_servers_reservation_is_one_allocation_by_its_ref(svc):
    """``POST /allocations`` needs no key: the same (kind, ref) answers the existing allocation
    (200); a key sent along changes nothing."""
    headers = {"Idempotency-Key": key()}
    body = {"user": "alice", "vc": "vision", "profile": "cpu-small", "kind": "server", "ref": "alice/"}
    first = await svc.call("service", "POST", "allocations", json=body, headers=headers)
    again = await svc.call("service", "POST", "allocations", json=body, headers=headers)
    assert (first.status_code, again.status_code) == (201, 200), again.text
    assert again.json()["id"] == first.json()["id"]
    assert len((await svc.call("admin", "GET", "allocations")).json()) == 1


# -- the SDK: a connection dropped after the service committed, then retried ---------------------


class DroppingProxy:
    """A real TCP proxy in front of the service that forwards every byte, except that the answer
    to the first request whose request line matches ``drop`` is never delivered: the request
    reaches the service (which commits), then the client's connection is closed as soon as the
    service starts answering. What a proxy restart or a flaky network does to a submit."""

    def __init__(self, upstream: int, drop: bytes) -> None:
        self.upstream, self.drop, self.dropped = upstream, drop, 0
        self.posts: list[bytes] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        state = {"drop": False}

        async def requests() -> None:
            while data := await reader.read(1 << 16):
                if data.startswith(b"POST "):
                    line = data.split(b"\r\n", 1)[0]
                    self.posts.append(line)
                    if self.drop in line and not self.dropped:
                        self.dropped, state["drop"] = 1, True
                up_writer.write(data)
                await up_writer.drain()

        async def answers() -> None:
            while data := await up_reader.read(1 << 16):
                if state["drop"]:  # the service has committed and answers: cut the client off
                    return
                writer.write(data)
                await writer.drain()

        tasks = [asyncio.ensure_future(requests()), asyncio.ensure_future(answers())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except (ConnectionError, OSError):
            pass
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for w in (writer, up_writer):
                w.close()


@pytest.fixture
async def behind_proxy(svc, request):
    """``(proxy, api_url)``: the service on a real socket (uvicorn, this loop) behind a DroppingProxy."""
    from helpers import served

    async with served(svc.app) as port:
        proxy = DroppingProxy(port, request.param)
        proxy_port = await proxy.start()
        try:
            yield proxy, f"http://127.0.0.1:{proxy_port}/services/yitong/api/v1"
        finally:
            await proxy.stop()


@pytest.mark.parametrize("behind_proxy", [b"/jobs "], indirect=True)
async def test_sdk_submit_retried_after_a_dropped_answer_makes_one_job(svc, behind_proxy):
    from yitong_lab.client import Client

    proxy, url = behind_proxy
    with Client(url=url, token=svc.hub.tokens["alice"]) as client:
        job = await asyncio.to_thread(client.submit_job, py_job("dropped", "vision", "print(1)"))
    assert proxy.dropped == 1 and len([p for p in proxy.posts if b"/jobs " in p]) == 2  # sent twice
    jobs = (await svc.call("alice", "GET", "jobs")).json()
    assert [j["id"] for j in jobs] == [job["id"]] and job["name"] == "dropped"


@pytest.mark.parametrize("behind_proxy", [b"/versions "], indirect=True)
async def test_sdk_commit_retried_after_a_dropped_answer_makes_one_version(svc, behind_proxy, tmp_path):
    from yitong_lab.client import Client
    from yitong_lab.datasets.sdk import Datasets

    proxy, url = behind_proxy
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("alpha")
    with Client(url=url, token=svc.hub.tokens["alice"]) as client:
        version = await asyncio.to_thread(
            Datasets(client).commit, tmp_path / "d", "vision/sdk-idem", "first", progress=None, stat_cache=False
        )
    assert proxy.dropped == 1 and len([p for p in proxy.posts if b"/versions " in p]) == 2
    assert (version["number"], version["unchanged"]) == (1, False)
    versions = (await svc.call("alice", "GET", "datasets/vision/sdk-idem/versions")).json()
    assert [v["number"] for v in versions] == [1]
