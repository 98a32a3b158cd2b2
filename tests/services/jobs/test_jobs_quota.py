"""Many quick jobs over 3 VCs with tight quotas: no quota is ever exceeded and every job ends."""

from __future__ import annotations

import asyncio
import time

from jobs_helpers import py_job
from sqlalchemy import select

from yitong_services.vcs.models import Allocation
from yitong_services.vcs.quota import total

VCS = {
    "vision": {
        "quota": {"cpu": 2, "memory": "1Gi"},
        "groups": ["vision"],
        "profiles": ["cpu-small"],
        "user_caps": {"cpu": 1},
    },
    "nlp": {"quota": {"cpu": 1, "memory": "1Gi"}, "groups": ["nlp"], "profiles": ["cpu-small"]},
    "default": {"quota": {"cpu": 3, "memory": "1Gi"}, "groups": ["everyone"], "profiles": ["cpu-small"]},
}
LIMITS = {"vision": 2, "nlp": 1, "default": 3}


async def test_two_hundred_jobs_never_exceed_quota(service_factory):
    async with service_factory(vcs=VCS, jobs={"poll_interval": 0.05}) as svc:
        who = [("alice", "vision"), ("erin", "vision"), ("bob", "nlp"), ("carol", "default"), ("alice", "default")]
        ids = []
        peak: dict[str, float] = {}

        def check() -> None:
            with svc.ctx.db.session() as s:
                allocs = list(s.scalars(select(Allocation)))
            for vc, limit in LIMITS.items():
                used = total(a.resources for a in allocs if a.vc == vc).get("cpu", 0)
                assert used <= limit, (vc, used)
                peak[vc] = max(peak.get(vc, 0), used)
            for user in ("alice", "erin"):
                assert total(a.resources for a in allocs if a.vc == "vision" and a.user == user).get("cpu", 0) <= 1

        # sampled while jobs are submitted too: the queue may drain as fast as it fills
        for n in range(200):
            user, vc = who[n % len(who)]
            r = await svc.call(user, "POST", "jobs", json=py_job(f"q{n}", vc, "0", cpu=1, memory="64Mi"))
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
            check()
        deadline = time.monotonic() + 240
        while True:
            check()
            jobs = (await svc.call("admin", "GET", "jobs")).json()
            if all(j["state"] in ("succeeded", "failed") for j in jobs):
                break
            assert time.monotonic() < deadline, [
                (j["id"], j["state"], j["reason"]) for j in jobs if j["state"] != "succeeded"
            ]
            await asyncio.sleep(0.05)
        assert sorted(j["id"] for j in jobs) == sorted(ids)
        assert {j["state"] for j in jobs} == {"succeeded"}
        assert peak["default"] >= 2  # jobs did run side by side
