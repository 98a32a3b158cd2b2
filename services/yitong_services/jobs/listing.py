"""``GET /jobs``: one page of the jobs a person may see, filtered and counted in SQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from ..core.authz import Person, is_member
from ..core.db import Database
from ..core.paging import Page
from ..vcs.models import VC
from . import records, states
from .models import Job
from .queue import positions


def visible_vcs(session: Any, person: Person) -> list[str] | None:
    """Names of the VCs whose jobs ``person`` sees; None for everything (admins)."""
    if person.admin:
        return None
    return [name for name, groups in session.execute(select(VC.name, VC.groups)) if is_member(person, groups)]


def page_of_jobs(
    db: Database, person: Person, page: Page, vc: str | None = None, state: str | None = None, user: str | None = None
) -> tuple[list[dict[str, Any]], int]:
    """``(jobs on the page, newest first; total matching)``. Queue positions are looked up only
    when the page holds a queued job."""
    with db.session() as s:
        where = [column == value for column, value in ((Job.vc, vc), (Job.state, state), (Job.user, user)) if value]
        names = visible_vcs(s, person)
        if names is not None:
            where.append(Job.vc.in_(names))
        total = s.scalar(select(func.count()).select_from(Job).where(*where)) or 0
        jobs = list(s.scalars(select(Job).where(*where).order_by(Job.id.desc()).offset(page.offset).limit(page.limit)))
    # positions after the session is closed: never wait for a second pooled connection holding one
    waiting = [j.id for j in jobs if j.state == states.QUEUED]
    pos = positions(db, waiting) if waiting else {}
    return [records.job_dict(j, pos.get(j.id)) for j in jobs], total


def watchable(db: Database, person: Person, job_id: int | None = None) -> frozenset[str] | None:
    """The VCs whose job events ``person`` may receive (None: all); 404 for a job they cannot see."""
    with db.session() as s:
        if job_id is not None:
            records.visible(s, person, job_id)
        names = visible_vcs(s, person)
    return None if names is None else frozenset(names)
