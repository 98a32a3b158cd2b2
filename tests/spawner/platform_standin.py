"""STAND-IN for the platform service's HTTP boundary (docs/architecture.md), for spawner tests only.

A tiny tornado app on a free port that speaks the contract's JSON for the three calls the spawner
makes: `GET /spawn-options?user=`, `POST /allocations`, `DELETE /allocations/{id}`. It is not the
platform service: quota arithmetic is not modelled; a test states refusals explicitly in
`StandIn.refusals[(vc, profile)] = (status, detail)`. The same app answers the hub's
`/hub/api` version check so a real jupyterhub-singleuser can start without a hub.
Accelerator placements come from the platform's own table (`yitong_services.vcs.devices`, the
defaults of the settings' `devices`); `StandIn.devices` may be replaced by a test.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jupyterhub
from helpers import free_port
from tornado import httpserver, web

from yitong_services.vcs.devices import DEVICES, placement, visible_env_names
from yitong_services.vcs.quantities import describe

BASE = "/services/yitong/api/v1"
GiB = 1024**3


def profile(
    name: str,
    cpu: float = 1,
    memory: int = 2 * GiB,
    accelerator: dict | None = None,
    arch: str | None = None,
    available: bool = True,
    reason: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    p = {
        "name": name,
        "display_name": extra.pop("display_name", name),
        "description": extra.pop("description", ""),
        "image": extra.pop("image", "yitong/singleuser-cpu:latest"),
        "kernel": extra.pop("kernel", "python3"),
        "cpu": float(cpu),
        "memory": memory,
        "accelerator": accelerator,
        "arch": arch,
        "available": available,
        "placement": placement(accelerator["type"], DEVICES) if accelerator else None,
    }
    size = {"cpu": float(cpu), "memory": memory} | ({accelerator["type"]: accelerator["count"]} if accelerator else {})
    p["size"] = describe(size)
    if reason:
        p["reason"] = reason
    return p


def vc(name: str, profiles: list[dict], description: str = "", free: dict | None = None) -> dict[str, Any]:
    free = free if free is not None else {"cpu": 4.0, "memory": 8 * GiB}
    return {
        "name": name,
        "description": description,
        "quota": free,
        "used": {},
        "free": free,
        "free_now": free,
        "free_now_text": describe(free),
        "quota_text": describe(free),
        "profiles": profiles,
    }


class StandIn:
    def __init__(self) -> None:
        self.spawn_options: dict[str, list[dict]] = {}  # user -> VC models
        self.accounts: dict[str, dict] = {}  # user -> the system account (multi-user mode)
        self.refusals: dict[tuple[str, str], tuple[int, str]] = {}
        self.allocations: dict[int, dict] = {}
        self.released: list[int] = []
        self.requests: list[tuple[str, str, str]] = []  # (method, path, authorization)
        self.token = "platform-secret"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}{BASE}"
        self.next_id = 1
        self.devices = DEVICES  # the accelerator table: spawn options' visible_env
        self.placed: list[int] | None = None  # device indices a server allocation gets (the local backend's)

    def find_profile(self, user: str, vc_name: str, name: str) -> dict | None:
        for v in self.spawn_options.get(user, []):
            if v["name"] == vc_name:
                return next((p for p in v["profiles"] if p["name"] == name), None)
        return None


class _Base(web.RequestHandler):
    def initialize(self, standin: StandIn) -> None:
        self.s = standin

    def prepare(self) -> None:
        auth = self.request.headers.get("Authorization", "")
        self.s.requests.append((self.request.method, self.request.uri, auth))
        if auth != f"token {self.s.token}":
            self.fail(403, "the spawner must present the service token")

    def fail(self, status: int, detail: str) -> None:
        self.set_status(status)
        self.finish({"detail": detail})


class SpawnOptions(_Base):
    def get(self) -> None:
        user = self.get_query_argument("user")
        vcs = copy.deepcopy(self.s.spawn_options.get(user, []))
        account = self.s.accounts.get(user)
        self.finish({"user": user, "vcs": vcs, "account": account, "visible_env": visible_env_names(self.s.devices)})


class Allocations(_Base):
    def post(self) -> None:
        body = json.loads(self.request.body)
        for existing in self.s.allocations.values():
            if (existing["kind"], existing["ref"]) == (body["kind"], body["ref"]):
                self.set_status(201)
                return self.finish(existing)
        if (body["vc"], body["profile"]) in self.s.refusals:
            return self.fail(*self.s.refusals[(body["vc"], body["profile"])])
        p = self.s.find_profile(body["user"], body["vc"], body["profile"])
        if p is None:
            return self.fail(404, f"unknown VC or profile {body['vc']}/{body['profile']}")
        resources = {"cpu": p["cpu"], "memory": p["memory"]}
        if p.get("accelerator"):
            resources[p["accelerator"]["type"]] = p["accelerator"]["count"]
        placed = None
        if p.get("accelerator") and self.s.placed is not None:
            placed = {"node": "n1", "type": p["accelerator"]["type"], "visible": self.s.placed}
        allocation = {
            **body,
            "id": self.s.next_id,
            "resources": resources,
            "devices": placed,
            "created": "2025-01-01T00:00:00Z",
        }
        self.s.allocations[self.s.next_id] = allocation
        self.s.next_id += 1
        self.set_status(201)
        self.finish(allocation)


class Allocation(_Base):
    def delete(self, allocation_id: str) -> None:
        if self.s.allocations.pop(int(allocation_id), None) is None:
            return self.fail(404, f"no allocation {allocation_id}")
        self.s.released.append(int(allocation_id))
        self.set_status(204)
        self.finish()


class HubVersion(web.RequestHandler):
    """STAND-IN for the hub's `GET /hub/api`: jupyterhub-singleuser checks it before it serves."""

    def get(self) -> None:
        self.finish({"version": jupyterhub.__version__})

    def post(self, *args: str) -> None:  # activity reports from the server: accepted, ignored
        self.finish({})


def start_standin() -> tuple[StandIn, httpserver.HTTPServer]:
    s = StandIn()
    app = web.Application(
        [
            (BASE + "/spawn-options", SpawnOptions, {"standin": s}),
            (BASE + "/allocations", Allocations, {"standin": s}),
            (BASE + r"/allocations/(\d+)", Allocation, {"standin": s}),
            (r"/hub/api", HubVersion),
            (r"/hub/api/(.*)", HubVersion),
        ]
    )
    server = app.listen(s.port, "127.0.0.1")
    return s, server
