"""Prometheus metrics: VC quota/usage, allocations and the dataset store (read at scrape time), HTTP requests.

A scrape (``GET <prefix>metrics``) is rendered in the thread pool and kept by the database's read
cache (core/readcache.py): scrapes that arrive before this process commits a write, within a
second, share one rendering, and concurrent ones wait for the same. The collectors' gauge families
are written by core/exposition.py (docs/benchmarks.md, "The exporter's scrape").
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from ..datasets.models import Dataset, DatasetVersion, StoredObject
from ..vcs.models import VC, Allocation, StorageMeasure
from ..vcs.quantities import Resources, tidy
from ..vcs.quota import total
from ..vcs.storage import uses as storage_uses
from . import exposition
from .db import Database

Row = tuple[str, str, Resources | None]  # an allocation: vc, kind, resources


def vc_families(vcs: Sequence[tuple[str, Resources]], rows: Iterable[Row]) -> list[GaugeMetricFamily]:
    """Quota, usage and allocation counts of the VCs (pure): ``yitong_vc_quota``, ``yitong_vc_used``
    (every quota key, 0 when unused), ``yitong_allocations`` (``server`` and ``job`` always)."""
    quota = GaugeMetricFamily("yitong_vc_quota", "VC quota per resource", labels=["vc", "resource"])
    used = GaugeMetricFamily("yitong_vc_used", "Resources allocated in a VC", labels=["vc", "resource"])
    allocs = GaugeMetricFamily("yitong_allocations", "Live allocations", labels=["vc", "kind"])
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
    return [quota, used, allocs]


class StateCollector(Collector):
    """VC quota and usage, allocations, the inventory. :meth:`render` writes the same text as
    ``generate_latest`` over :meth:`collect`, reusing each VC's lines while its quota and its
    allocations are unchanged: a scrape re-renders only the VCs that changed since the last one."""

    def __init__(self, db: Database, inventory: Resources) -> None:
        self.db = db
        self.inventory = inventory
        # VC -> ((quota, its allocation rows), its lines of each family of vc_families)
        self._lines: dict[str, tuple[Any, tuple[str, ...]]] = {}

    def read(self) -> tuple[list[tuple[str, Resources]], list[Row]]:
        # columns, not ORM rows: a scrape reads every VC and allocation (bench/ops.py, case (c))
        with self.db.session() as s:
            vcs = [(name, quota) for name, quota in s.execute(select(VC.name, VC.quota).order_by(VC.name))]
            rows = [
                (vc, kind, res)
                for vc, kind, res in s.execute(select(Allocation.vc, Allocation.kind, Allocation.resources))
            ]
        return vcs, rows

    def _inventory(self) -> GaugeMetricFamily:
        inv = GaugeMetricFamily("yitong_inventory", "What the backend offers", labels=["resource"])
        for resource, amount in self.inventory.items():
            inv.add_metric([resource], amount)
        return inv

    def collect(self) -> Iterator[Metric]:
        vcs, rows = self.read()
        yield from vc_families(vcs, rows)
        yield self._inventory()

    def render(self) -> bytes:
        vcs, rows = self.read()
        held: dict[str, list[Row]] = {}
        for row in rows:
            held.setdefault(row[0], []).append(row)
        kept, lines = self._lines, {}
        columns: tuple[list[str], ...] = ([], [], [])
        for name, quota in vcs:
            key = (quota, held.get(name, []))
            entry = kept.get(name)
            if entry is None or entry[0] != key:
                entry = (key, tuple(exposition.samples(f) for f in vc_families([(name, quota)], key[1])))
            lines[name] = entry
            for column, text in zip(columns, entry[1], strict=True):
                column.append(text)
        self._lines = lines  # VCs gone since are dropped
        heads = vc_families([], [])
        text = "".join(exposition.header(f) + "".join(column) for f, column in zip(heads, columns, strict=True))
        return text.encode() + exposition.render([self._inventory()])


class StoreCollector(Collector):
    """Datasets per VC, versions, objects/bytes in the dataset store (loose and packed), each VC's
    storage use and quota (vcs/storage.py) and the homes the storage walk measured."""

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
            storage = self._storage(s)
        yield from (datasets, versions, objects, size, *storage)

    @staticmethod
    def _storage(s: Any) -> list[GaugeMetricFamily]:
        used = GaugeMetricFamily(
            "yitong_vc_storage_used_bytes",
            "Bytes counted toward a VC's storage quota, by part: store (its objects), job_outputs (measured)",
            labels=["vc", "part"],
        )
        quota = GaugeMetricFamily(
            "yitong_vc_storage_quota_bytes", "A VC's storage quota (VCs that have one)", labels=["vc"]
        )
        homes = GaugeMetricFamily("yitong_home_bytes", "Bytes of a person's home, as last measured", labels=["user"])
        vcs = list(s.scalars(select(VC).order_by(VC.name)))
        for name, use in storage_uses(s, vcs).items():
            used.add_metric([name, "store"], use["store"])
            used.add_metric([name, "job_outputs"], use["job_outputs"])
            if use["quota"] is not None:
                quota.add_metric([name], use["quota"])
        query = select(StorageMeasure.name, StorageMeasure.bytes).where(StorageMeasure.kind == "home")
        for user, amount in s.execute(query.order_by(StorageMeasure.name)):
            homes.add_metric([user], amount)
        return [used, quota, homes]


class Metrics:
    """One registry per app (tests run several apps in one process): the request instruments in
    ``registry``, the collectors that read the database at scrape time in ``collectors``."""

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
        # and the packages' own (alerts/metrics.py: nodes, jobs, accelerators)
        self.collectors: list[Collector] = [StateCollector(db, inventory), StoreCollector(db), *extra]

    def collect(self) -> Iterator[Metric]:
        """Every family, as a registry's ``collect``."""
        return itertools.chain(self.registry.collect(), *(c.collect() for c in self.collectors))

    def render(self) -> bytes:
        """The text a scrape answers (blocking: it reads the database; call it in a thread)."""
        parts = [exposition.render(self.registry.collect())]
        for collector in self.collectors:
            own = getattr(collector, "render", None)  # a collector that writes its own text (StateCollector)
            parts.append(own() if own is not None else exposition.render(collector.collect()))
        return b"".join(parts)

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
