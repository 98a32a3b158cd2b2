"""The storage walk: every ``storage.usage_interval`` seconds, in a worker thread (never on the
event loop), measure each person's home (``<data_dir>/home/<name>``) and each job's folder
(``<data_dir>/jobs/<id>``: its outputs, logs and scratch) with core/disk_usage.py, and keep the
figures in ``storage_measures``. Job folders count toward their VC's storage quota
(vcs/storage.py) from the walk that measured them, so a job's writes count once it has been
measured, at the latest one walk after it ends; homes are shown (console, ``/metrics``'s
``yitong_home_bytes``) and held by the filesystem's own quotas where the admin sets them
(docs/operations.md, "Storage").

The first walk also counts every VC's store charges again (datasets/quota.py), so store use
from before storage quotas existed is counted. :func:`rows` is pure.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from anyio import to_thread
from sqlalchemy import delete, select

from ..core.context import Context
from ..core.disk_usage import Measured, children, measure
from ..core.models import utcnow
from ..core.periodic import Periodic
from ..datasets.quota import recount_all
from ..jobs.models import Job
from ..vcs.models import StorageMeasure

log = logging.getLogger("yitong_services.ops.storage_walk")


def rows(
    homes: Mapping[str, Measured], jobs: Mapping[str, Measured], job_vcs: Mapping[str, str], when: datetime
) -> list[dict[str, Any]]:
    """The ``storage_measures`` rows of one walk (pure); a job folder the database does not know
    (a removed job) is kept under no VC: it is shown, not charged."""
    out = [
        {"kind": "home", "name": name, "vc": None, "bytes": m.bytes, "files": m.files, "measured": when}
        for name, m in sorted(homes.items())
    ]
    out += [
        {"kind": "job", "name": name, "vc": job_vcs.get(name), "bytes": m.bytes, "files": m.files, "measured": when}
        for name, m in sorted(jobs.items(), key=lambda kv: (len(kv[0]), kv[0]))
    ]
    return out


def _measure_all(folders: Iterable[Path]) -> dict[str, Measured]:
    return {p.name: measure(p) for p in folders}


class StorageWalk(Periodic):
    what = "storage walk"
    stop_grace = 60.0  # a walk in its thread finishes before the service stops (its database writes)

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.data_dir = Path(ctx.settings.data_dir).absolute()
        self.every = float(ctx.settings.storage.usage_interval)
        self.last: dict[str, Any] = {"finished": None, "seconds": None, "homes": 0, "jobs": 0, "error": ""}
        self._counted = False

    @property
    def interval(self) -> float:
        return self.every

    async def start(self) -> None:
        if self.every > 0:
            await super().start()

    def walk(self) -> dict[str, Any]:
        """One walk, blocking (also what the tests and ``yitong-service`` call)."""
        started = time.monotonic()
        if not self._counted:
            recount_all(self.ctx.storage)
            self._counted = True
        homes = _measure_all(children(self.data_dir / "home"))
        jobs = _measure_all(p for p in children(self.data_dir / "jobs") if p.name.isdigit())
        with self.ctx.db.session() as s:
            job_vcs = {str(i): vc for i, vc in s.execute(select(Job.id, Job.vc))} if jobs else {}
        measured = rows(homes, jobs, job_vcs, utcnow())
        with self.ctx.db.writing() as s:
            s.execute(delete(StorageMeasure))
            if measured:
                s.execute(StorageMeasure.__table__.insert(), measured)
        self.last = {
            "finished": utcnow(),
            "seconds": round(time.monotonic() - started, 3),
            "homes": len(homes),
            "jobs": len(jobs),
            "error": "",
        }
        return self.last

    async def tick(self) -> None:
        try:
            await to_thread.run_sync(self.walk)
        except Exception as e:
            self.last = {**self.last, "error": f"{type(e).__name__}: {e}"}
            raise
