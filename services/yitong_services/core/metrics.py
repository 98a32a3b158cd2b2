"""Prometheus metrics: VC quota/usage, allocations and the dataset store (read at scrape time), HTTP requests."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from ..datasets.models import Dataset, DatasetVersion, StoredObject
from ..vcs.models import VC, Allocation
from ..vcs.quantities import Resources, tidy
from ..vcs.quota import total
from .db import Database


class StateCollector(Collector):
    def __init__(self, db: Database, inventory: Resources) -> None:
        self.db = db
        self.inventory = inventory

    def collect(self) -> Iterator[Metric]:
        quota = GaugeMetricFamily("yitong_vc_quota", "VC quota per resource", labels=["vc", "resource"])
        used = GaugeMetricFamily("yitong_vc_used", "Resources allocated in a VC", labels=["vc", "resource"])
        allocs = GaugeMetricFamily("yitong_allocations", "Live allocations", labels=["vc", "kind"])
        inv = GaugeMetricFamily("yitong_inventory", "What the backend offers", labels=["resource"])
        # columns, not ORM rows: a scrape reads every VC and allocation (bench/ops.py, case (c))
        with self.db.session() as s:
            vcs = s.execute(select(VC.name, VC.quota).order_by(VC.name)).all()
            rows = s.execute(select(Allocation.vc, Allocation.kind, Allocation.resources)).all()
        held: dict[str, list[Resources]] = {}
        kinds: dict[str, dict[str, int]] = {}
        for vc_name, kind, resources in rows:
            held.setdefault(vc_name, []).append(resources or {})
            counts = kinds.setdefault(vc_name, {"server": 0, "job": 0})
            counts[kind] = counts.get(kind, 0) + 1
        for vc_name, vc_quota in vcs:
            for resource, amount in vc_quota.items():
                quota.add_metric([vc_name, resource], amount)
            usage = {resource: tidy(resource, 0) for resource in vc_quota} | total(held.get(vc_name, []))
            for resource, amount in usage.items():
                used.add_metric([vc_name, resource], amount)
            for kind, count in kinds.get(vc_name, {"server": 0, "job": 0}).items():
                allocs.add_metric([vc_name, kind], count)
        for resource, amount in self.inventory.items():
            inv.add_metric([resource], amount)
        yield from (quota, used, allocs, inv)


class StoreCollector(Collector):
    """Datasets per VC, versions, and objects/bytes in the dataset store (loose and packed)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def collect(self) -> Iterator[Metric]:
        datasets = GaugeMetricFamily("yitong_datasets", "Datasets per VC", labels=["vc"])
        versions = GaugeMetricFamily("yitong_dataset_versions", "Dataset versions per VC", labels=["vc"])
        objects = GaugeMetricFamily("yitong_store_objects", "Objects in the dataset store", labels=["kind"])
        size = GaugeMetricFamily("yitong_store_bytes", "Bytes of objects in the dataset store", labels=["kind"])
        with self.db.session() as s:
            for vc, count in s.execute(select(Dataset.vc, func.count(Dataset.id)).group_by(Dataset.vc)):
                datasets.add_metric([vc], count)
            query = select(Dataset.vc, func.count(DatasetVersion.id)).join(
                Dataset, Dataset.id == DatasetVersion.dataset_id
            )
            for vc, count in s.execute(query.group_by(Dataset.vc)):
                versions.add_metric([vc], count)
            packed = StoredObject.pack.is_(None)
            for loose, count, total in s.execute(
                select(packed, func.count(StoredObject.hash), func.coalesce(func.sum(StoredObject.size), 0)).group_by(
                    packed
                )
            ):
                objects.add_metric(["loose" if loose else "packed"], count)
                size.add_metric(["loose" if loose else "packed"], int(total))
        yield from (datasets, versions, objects, size)


class Metrics:
    """One registry per app (tests run several apps in one process)."""

    def __init__(
        self, db: Database, inventory: Resources, api_prefix: str = "", extra: Iterable[Collector] = ()
    ) -> None:
        self.api_prefix = api_prefix
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "yitong_http_requests", "HTTP requests", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "yitong_http_request_duration_seconds", "HTTP latency", ["method", "route"], registry=self.registry
        )
        self.registry.register(StateCollector(db, inventory))
        self.registry.register(StoreCollector(db))
        for collector in extra:  # the packages' own (alerts/metrics.py: nodes, jobs, accelerators)
            self.registry.register(collector)

    def install(self, app: FastAPI) -> None:
        # a plain ASGI middleware, not ``@app.middleware("http")``: that one relays each chunk
        # of a request body through a task group, which costs more than the bytes themselves
        # on a multi-GiB upload
        app.add_middleware(_CountRequests, metrics=self)

    def observe(self, method: str, route: Any, status: int, seconds: float) -> None:
        # the API route's path below <prefix>api/v1 ("/vcs/{vc}"): low cardinality
        path = getattr(route, "path", "unmatched").removeprefix(self.api_prefix)
        self.requests.labels(method, path, str(status)).inc()
        self.latency.labels(method, path).observe(seconds)


class _CountRequests:
    """Counts each HTTP request (method, route, status) and its latency."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status: list[int] = []

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self.app(scope, receive, sending)
        if status:
            self.metrics.observe(scope["method"], scope.get("route"), status[0], time.perf_counter() - start)
