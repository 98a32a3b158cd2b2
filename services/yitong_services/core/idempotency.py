"""``Idempotency-Key`` on create requests: a retry gets the first answer again and creates nothing.

The first answer (status and JSON body) of a create sent with the header is stored **in the
transaction that makes the object**, keyed by (caller, key): both are committed or neither is.
A later request with the same key from the same caller:

- the same request (hash of method, path, query and body): the stored answer again, with
  ``Idempotent-Replayed: true``; nothing is created;
- another request: 422 saying the key belongs to another request.

Two requests with one key at the same time make one object. On SQLite the create's
transaction holds the write lock (``BEGIN IMMEDIATE``), so the later one finds the earlier
one's row and replays it. On PostgreSQL, where two processes may both find no row, the later
insert of the key waits on the unique index until the earlier transaction commits, then fails;
its transaction (the object with it) rolls back and it answers with the stored row. A create
refused for another reason (say the dataset commit's "parent is not the latest") looks once more
for a stored answer of the same request before refusing, which covers a winner that committed
while the loser was checking.

A refused request (4xx) stores nothing: nothing was created, so a retry is decided again (a
quota or membership may have changed meanwhile), and the key may be used for a corrected
request. Keys expire after ``service.idempotency_ttl`` seconds (default 24 h): an expired row
is ignored, replaced when its key comes again, and swept at insert.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

from anyio import to_thread
from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .context import Context
from .db import Database
from .errors import Refusal
from .models import IdempotencyKey, utcnow

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
MAX_LENGTH = 255
SWEEP_EVERY = 60.0  # seconds between deletions of expired keys (per process)

T = TypeVar("T")
_last_sweep = 0.0


# -- pure ---------------------------------------------------------------------------------------


def parse_key(value: str | None) -> str | None:
    """The key of a request (None without the header); 422 unless 1-255 printable ASCII characters."""
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_LENGTH or any(not " " <= c <= "~" for c in value):
        raise Refusal(
            422,
            f"{HEADER}: must be 1 to {MAX_LENGTH} printable ASCII characters (a random UUID per create is a good key)",
        )
    return value


def request_hash(method: str, path: str, query: str, body: bytes) -> str:
    """SHA-256 of the method, the path, the query (parameters sorted) and the body bytes."""
    digest = hashlib.sha256()
    for part in (method.upper(), path, urlencode(sorted(parse_qsl(query, keep_blank_values=True)))):
        digest.update(part.encode() + b"\0")
    digest.update(body)
    return digest.hexdigest()


def verdict(stored_hash: str, stored_at: datetime, digest: str, now: datetime, ttl: float) -> str:
    """What a stored key means for a request: ``expired``, ``replay`` or ``conflict``."""
    if now - stored_at > timedelta(seconds=ttl):
        return "expired"
    return "replay" if stored_hash == digest else "conflict"


def conflict_sentence(key: str, operation: str) -> str:
    return (
        f"{HEADER} '{key}' was already used for another request ({operation} with other "
        "parameters); send a new key for a new request"
    )


# -- outcomes -----------------------------------------------------------------------------------


class Replay(Exception):
    """The stored answer of this request: send it again, create nothing."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status, self.body = status, body

    def response(self) -> JSONResponse:
        return JSONResponse(self.body, status_code=self.status, headers={REPLAYED: "true"})


class KeyTaken(Exception):
    """Another transaction stored an answer under this key first (the unique index said so)."""


# -- the database side --------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One create request's key; ``check`` and ``store`` run inside the create's transaction."""

    user: str
    key: str
    operation: str
    digest: str
    ttl: float

    def _row(self, session: Session) -> IdempotencyKey | None:
        return session.scalar(
            select(IdempotencyKey).where(IdempotencyKey.user == self.user, IdempotencyKey.key == self.key)
        )

    def _judge(self, session: Session, row: IdempotencyKey | None, drop_expired: bool) -> None:
        if row is None:
            return
        outcome = verdict(row.request_hash, row.created, self.digest, utcnow(), self.ttl)
        if outcome == "expired":
            if drop_expired:
                session.delete(row)
                session.flush()
            return
        if outcome == "conflict":
            raise Refusal(422, conflict_sentence(self.key, row.operation))
        raise Replay(row.status, row.response)

    def check(self, session: Session) -> None:
        """Before creating: :class:`Replay` for a stored answer of this request, 422 for another
        request's; an expired row is deleted so that the key can be stored again."""
        self._judge(session, self._row(session), drop_expired=True)

    def lookup(self, db: Database) -> None:
        """:meth:`check` in a read-only session of its own (expired rows are only ignored)."""
        with db.session() as session:
            self._judge(session, self._row(session), drop_expired=False)

    def store(self, session: Session, status: int, body: Any) -> Any:
        """Insert the answer (JSON-encoded, as the client gets it) in the create's transaction,
        so that it commits or rolls back with the object; returns the encoded body.
        :class:`KeyTaken` when a concurrent transaction stored this key first."""
        encoded = jsonable_encoder(body)
        _sweep(session, self.ttl)
        session.add(
            IdempotencyKey(
                user=self.user,
                key=self.key,
                operation=self.operation,
                request_hash=self.digest,
                status=status,
                response=encoded,
            )
        )
        try:
            session.flush()
        except IntegrityError as error:
            raise KeyTaken(self.key) from error
        return encoded


def _sweep(session: Session, ttl: float) -> None:
    """Delete expired keys, at most every :data:`SWEEP_EVERY` seconds (or ``ttl``) per process."""
    global _last_sweep
    now = time.monotonic()
    if now - _last_sweep < min(SWEEP_EVERY, ttl):
        return
    _last_sweep = now
    session.execute(delete(IdempotencyKey).where(IdempotencyKey.created < utcnow() - timedelta(seconds=ttl)))


# -- the route side -----------------------------------------------------------------------------


async def claim_for(request: Request, user: str, operation: str, ttl: float) -> Claim | None:
    """The request's :class:`Claim` (None without the header; 422 for a malformed key)."""
    key = parse_key(request.headers.get(HEADER))
    if key is None:
        return None
    digest = request_hash(request.method, request.url.path, request.url.query, await request.body())
    return Claim(user=user, key=key, operation=operation, digest=digest, ttl=ttl)


async def once(
    request: Request, ctx: Context, user: str, operation: str, create: Callable[[Claim | None], Awaitable[T]]
) -> T | JSONResponse:
    """Run ``create(claim)`` unless this request's answer is stored already (then replay it).

    ``user`` is the authenticated caller; ``create`` calls ``claim.check`` and ``claim.store``
    inside the transaction that makes the object (``claim`` is None when the request has no key)."""
    db = ctx.db
    claim = await claim_for(request, user, operation, ctx.settings.service.idempotency_ttl)
    if claim is None:
        return await create(None)
    try:
        await to_thread.run_sync(claim.lookup, db)
        return await create(claim)
    except Replay as replay:
        return replay.response()
    except (Refusal, KeyTaken) as refused:
        try:  # a concurrent request with this key may have won meanwhile
            await to_thread.run_sync(claim.lookup, db)
        except Replay as replay:
            return replay.response()
        if isinstance(refused, KeyTaken):
            raise Refusal(409, f"a request with {HEADER} '{claim.key}' is still in progress; retry it") from None
        raise
