"""``GET /jobs/events``: a real HTTP client (httpx streaming over TCP to the service served by
uvicorn on a free port) receives a job's state changes as server-sent events, only for its VCs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import httpx
import pytest
from helpers import served
from jobs_helpers import py_job

from yitong_services.jobs.events import changes

PREFIX = "/services/yitong/api/v1"


def test_changes_are_the_differences():
    before = {1: ("v", "a", "queued", "", 0, 2), 2: ("v", "a", "queued", "", 0, 1)}
    after = {1: ("v", "a", "queued", "", 0, 1), 2: ("v", "a", "admitted", "", 1, None)}
    assert [(e["id"], e["state"], e["position"]) for e in changes(before, after)] == [
        (1, "queued", 1),
        (2, "admitted", None),
    ]
    assert changes(after, after) == []


async def events(client: httpx.AsyncClient, url: str, out: list[dict], ready: asyncio.Event) -> None:
    async with client.stream("GET", url) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        kind = None
        async for line in r.aiter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                if kind == "ready":
                    ready.set()
                else:
                    out.append({"event": kind, **json.loads(line[6:])})


@pytest.fixture
async def svc(service_factory):
    async with service_factory(jobs={"poll_interval": 0.1}) as s:
        yield s


async def test_a_watcher_receives_state_changes_of_its_vcs_only(svc, hub):
    async with served(svc.app) as port:
        base = f"http://127.0.0.1:{port}{PREFIX}"
        seen: dict[str, list[dict]] = {"alice": [], "bob": []}
        tasks = []
        async with httpx.AsyncClient(timeout=30) as client:
            for who in seen:
                client_ready = asyncio.Event()
                headers = {"Authorization": f"token {hub.tokens[who]}"}
                c = httpx.AsyncClient(headers=headers, timeout=30)
                tasks.append(
                    (c, asyncio.create_task(events(c, f"{base}/jobs/events?seconds=30", seen[who], client_ready)))
                )
                await asyncio.wait_for(client_ready.wait(), 10)
            r = await client.post(
                f"{base}/jobs",
                json=py_job("pushed", "vision", "print(1)"),
                headers={"Authorization": f"token {hub.tokens['alice']}"},
            )
            assert r.status_code == 201, r.text
            job_id = r.json()["id"]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if any(e["id"] == job_id and e["state"] == "succeeded" for e in seen["alice"]):
                    break
                await asyncio.sleep(0.05)
            states = [e["state"] for e in seen["alice"] if e["id"] == job_id]
            assert states and states[-1] == "succeeded", seen["alice"]
            assert all(e["event"] == "job" and e["vc"] == "vision" for e in seen["alice"])
            assert seen["bob"] == []  # bob is not in VC vision: nothing of alice's job reaches him
            # a job's own stream; another VC's job is a 404 like GET /jobs/{id}
            r = await client.get(
                f"{base}/jobs/events?job={job_id}&seconds=0", headers={"Authorization": f"token {hub.tokens['bob']}"}
            )
            assert r.status_code == 404
        for c, task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await c.aclose()
