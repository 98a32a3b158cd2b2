"""Helpers for the job tests: tiny ``python -c`` jobs and waiting for states."""

from __future__ import annotations

import asyncio
import sys
import time

PY = sys.executable
TERMINAL = {"succeeded", "failed", "cancelled", "preempted"}


def py_job(name: str, vc: str, program: str, **extra) -> dict:
    return {"name": name, "vc": vc, "environment": {"kernel": "python3"}, "command": [PY, "-c", program],
            "cpu": extra.pop("cpu", 1), "memory": extra.pop("memory", "64Mi"), **extra}


async def wait_state(svc, who: str, job_id: int, states=TERMINAL, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        r = await svc.call(who, "GET", f"jobs/{job_id}")
        assert r.status_code == 200, r.text
        if r.json()["state"] in states:
            return r.json()
        assert time.monotonic() < deadline, f"job {job_id} stayed {r.json()['state']}: {r.json()['reason']}"
        await asyncio.sleep(0.1)
