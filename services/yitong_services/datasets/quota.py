"""The VC storage quota on the store's writers (vcs/storage.py says what counts).

Uploads name the VC they are for (``?vc=``): a resumable upload is refused on its declared
``Upload-Length`` before any byte of it is written, a pack on its ``Content-Length`` (or, sent
without one, as soon as the bytes streamed pass the room left), and both are checked again
under the storage lock when they are indexed, where the VC is charged for them. A commit
charges the VC for the objects its version names that the VC does not hold yet, under the same
lock and in the same transaction as the version. Near the limit, a refusal first counts the VC
again (:func:`recount`: a deleted version's objects are freed at once), then answers 413.
Blocking: call from a worker thread.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core.authz import Person, is_member
from ..core.errors import Refusal
from ..vcs import storage as vcstorage
from ..vcs.catalog import member_vc
from ..vcs.models import VC
from .manifest import CorruptManifest, hashes
from .models import Dataset, DatasetVersion
from .objindex import storage_lock
from .storage import Storage

STATUS = 413
log = logging.getLogger(__name__)


def upload_vc(session: Session, person: Person, vc: str | None) -> str | None:
    """The VC an upload is for: ``vc`` when ``person`` belongs to it (404 otherwise); without
    one, None while none of the person's VCs has a storage quota, else 422 (the bytes must be
    someone's)."""
    if vc is not None:
        return member_vc(session, person, vc).name
    limited = [
        name
        for name, groups, quota in session.execute(select(VC.name, VC.groups, VC.storage_quota).order_by(VC.name))
        if quota is not None and is_member(person, groups)
    ]
    if limited:
        raise Refusal(
            422,
            f"name the VC this upload is for (?vc=<name>): VC {limited[0]} has a storage quota;"
            " yt and the SDK send the dataset's VC",
        )
    return None


def room(session: Session, vc: str | None) -> int | None:
    """Bytes ``vc`` may still add; None: no limit."""
    if vc is None:
        return None
    quota = vcstorage.quota_of(session, vc)
    return None if quota is None else max(quota - vcstorage.used(session, vc), 0)


def precheck(session: Session, vc: str | None, h: str | None, size: int, what: str) -> None:
    """413 when ``size`` new bytes (object ``h``, unless the VC holds it) do not fit in ``vc``."""
    if vc is None:
        return
    adds = size if h is None else sum(vcstorage.uncharged(session, vc, {h: size}).values())
    why = vcstorage.check(session, vc, adds, what)
    if why:
        raise Refusal(STATUS, why)


def over(session: Session, vc: str | None, adds: int, what: str) -> str:
    """The 413 sentence for ``adds`` bytes past what ``vc`` had room for (a pack as it streams)."""
    found = vcstorage.check(session, vc, adds, what) if vc is not None else None
    return found or f"VC {vc}: {what} exceeds its storage quota"


def settle(
    storage: Storage, session: Session, vc: str | None, sizes: dict[str, int], what: str, upload: bool = False
) -> None:
    """Under the storage lock: charge ``vc`` for those of ``sizes`` it does not hold, or 413.
    ``upload``: the charges are pending (no version names them yet); else a version names them."""
    if vc is None:
        return
    new = vcstorage.uncharged(session, vc, sizes)
    adds = sum(new.values())
    why = vcstorage.check(session, vc, adds, what)
    if why and _recounted(storage, session, vc):
        new = vcstorage.uncharged(session, vc, sizes)
        why = vcstorage.check(session, vc, sum(new.values()), what)
    if why:
        raise Refusal(STATUS, why)
    vcstorage.charge(session, vc, new, pending=upload)
    if not upload:
        vcstorage.named(session, vc, [h for h in sizes if h not in new])


def _recounted(storage: Storage, session: Session, vc: str) -> int:
    """:func:`recount_in` before a refusal; 0 where a manifest cannot be read (the 413 stands)."""
    try:
        with session.begin_nested():
            return recount_in(storage, session, vc)
    except Refusal as e:
        log.warning("storage of VC %s not counted again: %s", vc, e.detail)
        return 0


def live_objects(storage: Storage, session: Session, vc: str) -> dict[str, int]:
    """hash -> size of every object a version of ``vc``'s datasets (its models' too) names."""
    manifests = session.scalars(
        select(DatasetVersion.manifest).join(Dataset, Dataset.id == DatasetVersion.dataset_id).where(Dataset.vc == vc)
    )
    out: dict[str, int] = {}
    for h in set(manifests):
        try:
            out.update(hashes(storage.manifest(h)))
        except (FileNotFoundError, CorruptManifest) as e:
            raise Refusal(409, f"VC {vc}: manifest {h} cannot be read ({e}); run verify") from e
    return out


def recount_in(storage: Storage, session: Session, vc: str, grace: float | None = None) -> int:
    """Make ``vc``'s charges what its versions name (pending uploads younger than the store's
    grace stay: a commit not made yet). Returns the bytes freed."""
    grace = storage.grace if grace is None else grace
    cutoff = datetime.now(UTC) - timedelta(seconds=grace)
    live = live_objects(storage, session, vc)
    have = vcstorage.charges(session, vc)
    gone = [h for h, (_size, pending, at) in have.items() if h not in live and not (pending and _aware(at) >= cutoff)]
    vcstorage.release(session, vc, gone)
    vcstorage.charge(session, vc, {h: size for h, size in live.items() if h not in have})  # charges from before 0017
    return sum(have[h][0] for h in gone)


def recount(storage: Storage, vc: str, grace: float | None = None) -> int:
    """:func:`recount_in` in a transaction of its own (after a delete, by GC and the storage
    walk). A manifest that cannot be read leaves the VC's charges as they were (logged: verify
    says more); the answer of a delete that already happened is not turned into an error."""
    try:
        with storage_lock(storage.db) as s:
            return recount_in(storage, s, vc, grace)
    except Refusal as e:
        log.warning("storage of VC %s not counted again: %s", vc, e.detail)
        return 0


def recount_all(storage: Storage, grace: float | None = None) -> int:
    with storage.db.session() as s:
        names = list(s.scalars(select(VC.name).order_by(VC.name)))
    return sum(recount(storage, name, grace) for name in names)


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
