"""How full the platform's own disks are, for the ``disk_full`` and ``disk_free`` rule kinds
(alerts/kinds.py): ``yitong_disk_avail_bytes`` and ``yitong_disk_size_bytes`` per filesystem that
holds one of the platform's folders, measured with ``statvfs`` at scrape time (in the scrape's
thread). The platform measures them itself rather than the node exporter's
``node_filesystem_avail_bytes``: the service knows which folders are its own (the data directory,
which holds the hub's database too, the dataset store, the job folders, the cache, a SQLite
database of its own) on any host, a pod's volume included, without a mount point to configure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

#: one filesystem as measured: (device, bytes available to the platform's accounts, size in bytes)
Measure = tuple[int, int, int]


def folders(settings: Any) -> list[tuple[str, Path]]:
    """The platform's folders by the ``disk`` label their filesystem is published under, the
    data directory first (it holds the hub's database, ``jupyterhub.sqlite``)."""
    out = [("data", settings.data_dir.absolute())]
    if settings.storage_url.startswith("file://"):
        out.append(("store", Path(settings.storage_url.removeprefix("file://"))))
    out += [
        ("jobs", (settings.data_dir / "jobs").absolute()),
        ("cache", settings.cache_dir),
        ("materialized", settings.materialize_dir),
    ]
    if settings.database_url.startswith("sqlite:///"):
        out.append(("database", Path(settings.database_url.removeprefix("sqlite:///")).absolute().parent))
    return out


def disk_families(measures: Iterable[tuple[str, Measure | None]]) -> list[GaugeMetricFamily]:
    """The gauges (pure): one sample per filesystem, labelled by the first folder on it; a folder
    that could not be measured (None) is left out."""
    avail = GaugeMetricFamily(
        "yitong_disk_avail_bytes",
        "Bytes free for the platform's accounts on the filesystem of a platform folder"
        " (data: the data directory and the hub's database; store, jobs, cache, materialized, database)",
        labels=["disk"],
    )
    size = GaugeMetricFamily("yitong_disk_size_bytes", "Size of the filesystem of a platform folder", labels=["disk"])
    seen: set[int] = set()
    for name, measure in measures:
        if measure is None or measure[0] in seen:
            continue
        seen.add(measure[0])
        avail.add_metric([name], measure[1])
        size.add_metric([name], measure[2])
    return [avail, size]


def measure(folder: Path) -> Measure | None:
    """statvfs of ``folder``, or of its nearest existing parent (a folder made on first use);
    None when neither can be read."""
    path = folder
    while True:
        try:
            st = os.statvfs(path)
            return os.stat(path).st_dev, st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
        except FileNotFoundError:
            if path.parent == path:
                return None
            path = path.parent
        except OSError:
            return None


class DiskCollector(Collector):
    def __init__(self, settings: Any) -> None:
        self.folders = folders(settings)

    def collect(self) -> Iterator[Metric]:
        yield from disk_families((name, measure(folder)) for name, folder in self.folders)
