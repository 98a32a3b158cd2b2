"""First start: insert the settings file's profiles and VCs that were never seeded before.

A name is seeded once (recorded in ``seed_log``): an existing row is left alone, and a VC or
profile an admin deleted later is not brought back by a restart.
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from ..core.db import Database
from ..core.settings import Settings
from .models import VC, Profile, SeedLog

log = logging.getLogger(__name__)


def seed(db: Database, settings: Settings) -> list[str]:
    """Returns what was inserted, e.g. ``["profile cpu-small", "vc default"]``."""
    inserted: list[str] = []
    with db.session() as s, s.begin():
        done = {(row.kind, row.name) for row in s.scalars(select(SeedLog))}
        for name, spec in settings.profiles.items():
            if ("profile", name) in done:
                continue
            s.add(SeedLog(kind="profile", name=name))
            if s.scalar(select(Profile.id).where(Profile.name == name)) is None:
                values = spec.model_dump()
                values["display_name"] = values["display_name"] or name
                s.add(Profile(name=name, **values))
                inserted.append(f"profile {name}")
        s.flush()
        for name, spec in settings.vcs.items():
            if ("vc", name) in done:
                continue
            s.add(SeedLog(kind="vc", name=name))
            if s.scalar(select(VC.id).where(VC.name == name)) is None:
                values = spec.model_dump()
                if values["idle_timeout"] is None:  # the settings' culling.vcs seeds it too
                    values["idle_timeout"] = settings.culling.vcs.get(name) or None
                s.add(VC(name=name, **values))
                inserted.append(f"vc {name}")
    for what in inserted:
        log.info("seeded %s from the settings file", what)
    return inserted
