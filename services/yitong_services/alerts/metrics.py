"""What alert rules and the dashboard read from ``/metrics`` beyond VC quota/usage (core/metrics.py):
per node allocatable/allocated, jobs by state, queue length per VC, recently failed jobs, and the
accelerators (NVML where a GPU exists; allocated-but-idle where both are known)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from ..core.db import Database
from ..jobs.models import Job
from ..jobs.states import ACTIVE, FAILED, QUEUED
from ..vcs.models import Allocation
from ..vcs.quantities import Resources
from .nvml import NVML

GPU = "nvidia.com/gpu"


def node_name(backend: str) -> str:
    """The local backend is this machine; the others' inventory is one pool named after the backend."""
    return socket.gethostname() if backend == "local" else backend


class OperationsCollector(Collector):
    def __init__(self, db: Database, inventory: Resources, backend: str, failed_window: float, nvml: NVML) -> None:
        self.db = db
        self.inventory = inventory
        self.node = node_name(backend)
        self.failed_window = failed_window
        self.nvml = nvml

    def collect(self) -> Iterator[Metric]:
        node = self.node
        allocatable = GaugeMetricFamily(
            "yitong_node_allocatable", "What a node offers, per resource", labels=["node", "resource"]
        )
        allocated = GaugeMetricFamily(
            "yitong_node_allocated", "What allocations hold on a node, per resource", labels=["node", "resource"]
        )
        jobs = GaugeMetricFamily("yitong_jobs", "Jobs by VC and state", labels=["vc", "state"])
        queue = GaugeMetricFamily("yitong_vc_queue_length", "Jobs queued in a VC (VCs with jobs)", labels=["vc"])
        failed = GaugeMetricFamily(
            "yitong_jobs_failed_recent", "Jobs of a VC that failed within alerts.failed_job_window", labels=["vc"]
        )
        held: dict[str, float] = {r: 0 for r in self.inventory}
        since = datetime.now(UTC) - timedelta(seconds=self.failed_window)
        with self.db.session() as s:
            for resources in s.scalars(select(Allocation.resources)):
                for resource, amount in (resources or {}).items():
                    held[resource] = held.get(resource, 0) + amount
            by_state = select(Job.vc, Job.state, func.count(Job.id)).group_by(Job.vc, Job.state)
            counts = {(vc, state): n for vc, state, n in s.execute(by_state.order_by(Job.vc, Job.state))}
            recent = dict(
                s.execute(
                    select(Job.vc, func.count(Job.id))
                    .where(Job.state == FAILED, Job.finished >= since)
                    .group_by(Job.vc)
                ).all()
            )
            taken = [
                (vc, devices)
                for vc, devices in s.execute(select(Job.vc, Job.devices).where(Job.state.in_(ACTIVE)))
                if isinstance(devices, dict) and devices.get("type") == GPU
            ]
        for resource, amount in self.inventory.items():
            allocatable.add_metric([node, resource], amount)
        for resource, amount in held.items():
            allocated.add_metric([node, resource], amount)
        for (vc, state), n in counts.items():  # the states a VC's jobs are in (absent: none)
            jobs.add_metric([vc, state], n)
        for vc in sorted({vc for vc, _ in counts}):  # the VCs that have jobs (none: no series)
            queue.add_metric([vc], counts.get((vc, QUEUED), 0))
            failed.add_metric([vc], recent.get(vc, 0))
        yield from (allocatable, allocated, jobs, queue, failed)
        yield from self._accelerators(node, taken)

    def _accelerators(self, node: str, taken: list[tuple[str, dict]]) -> Iterator[Metric]:
        available = GaugeMetricFamily(
            "yitong_accelerator_metrics_available",
            "1 when accelerator figures are read (NVML), 0 when absent (no GPU, driver or library)",
            labels=["source"],
        )
        gpus = self.nvml.gpus()
        available.add_metric(["nvml"], 1 if self.nvml.available else 0)
        yield available
        alloc = GaugeMetricFamily(
            "yitong_accelerator_allocated",
            "1 for an accelerator a running job holds (local visible-device indices)",
            labels=["node", "index", "vc", "type"],
        )
        by_index: dict[int, str] = {}
        for vc, devices in taken:
            for index in devices.get("visible") or []:
                if isinstance(index, int):
                    by_index[index] = vc
                    alloc.add_metric([node, str(index), vc, GPU], 1)
        yield alloc
        if not gpus:
            return
        util = GaugeMetricFamily(
            "yitong_accelerator_utilization_percent",
            "GPU busy percent (NVML)",
            labels=["node", "index", "uuid", "name"],
        )
        used = GaugeMetricFamily(
            "yitong_accelerator_memory_used_bytes", "GPU memory in use (NVML)", labels=["node", "index", "uuid"]
        )
        total = GaugeMetricFamily(
            "yitong_accelerator_memory_total_bytes", "GPU memory (NVML)", labels=["node", "index", "uuid"]
        )
        idle = GaugeMetricFamily(
            "yitong_accelerator_allocated_idle",
            "1 for an allocated accelerator that shows no use (NVML utilisation 0)",
            labels=["node", "index", "vc"],
        )
        for g in gpus:
            util.add_metric([node, str(g.index), g.uuid, g.name], g.utilization)
            used.add_metric([node, str(g.index), g.uuid], g.memory_used)
            total.add_metric([node, str(g.index), g.uuid], g.memory_total)
            if g.index in by_index:
                idle.add_metric([node, str(g.index), by_index[g.index]], 1 if g.utilization == 0 else 0)
        yield from (util, used, total, idle)
