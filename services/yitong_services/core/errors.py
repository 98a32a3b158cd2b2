"""Errors as JSON ``{"detail": "<sentence>"}`` (validation errors too)."""

from __future__ import annotations

import errno
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from .hub import HubError, HubUnavailable
from .limits import clip_runs

log = logging.getLogger(__name__)


class Refusal(Exception):
    """A request the service refuses, with the HTTP status and a sentence a person understands."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def describe_validation(errors: list[dict]) -> str:
    parts = []
    for item in errors:
        loc = [str(p) for p in item.get("loc", ()) if p not in ("body", "function-after[check_name(), str]")]
        msg = str(item.get("msg", "invalid")).removeprefix("Value error, ")
        if item.get("type") == "extra_forbidden":
            msg = "unknown field"
        parts.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
    return "; ".join(parts) or "invalid request"


#: seconds a client is asked to wait after the database did not answer (``Retry-After``)
DATABASE_RETRY_AFTER = 5
#: seconds a client waits before asking again while the hub cannot check tokens
HUB_RETRY_AFTER = 5
#: PostgreSQL's SQLSTATEs of a server going away or not taking connections yet (class 08, the
#: connection; 57P01-57P03, shut down or starting) and of a full disk (53100)
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03")
_FULL = ("53100",)


def database_failure(exc: BaseException) -> tuple[int, str] | None:
    """``(status, sentence)`` for a database error a person should hear about as such (pure):
    507 when its disk is full, 503 when it does not answer (stopped, restarting, unreachable,
    its pool exhausted, SQLite locked for too long); None for any other error (a bug: 500)."""
    from sqlalchemy import exc as sa

    if isinstance(exc, sa.TimeoutError):
        return 503, "the platform's database is busy (no connection free in time); try again in a few seconds"
    if not isinstance(exc, sa.DBAPIError):
        return None
    orig = exc.orig
    state = str(getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None) or "")
    text = str(orig).lower()
    if state.startswith(_FULL) or "database or disk is full" in text or "no space left on device" in text:
        return 507, (
            "the platform's database has no space left on its disk: nothing was changed; "
            "an administrator must free space on the database's disk"
        )
    if state.startswith(_UNAVAILABLE_STATES) or exc.connection_invalidated:
        return 503, "the platform's database is not answering (restarting or stopped); try again in a few seconds"
    if isinstance(exc, (sa.OperationalError, sa.InterfaceError)):
        if "locked" in text or "busy" in text:
            return 503, "the platform's database is busy; try again in a few seconds"
        if "disk i/o error" in text or "readonly" in text or "read-only" in text:
            return 507, (
                "the platform's database cannot write to its disk: nothing was changed; "
                "an administrator must check the database's disk"
            )
        return 503, "the platform's database is not answering (restarting or stopped); try again in a few seconds"
    return None


#: errnos of a disk that cannot take more (full, or the account's quota spent)
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def places(settings: Any) -> dict[str, str]:
    """The platform's folders by what a person calls them, most specific first."""
    out = {
        str(settings.cache_dir): "the dataset cache",
        str(settings.materialize_dir): "the folder datasets are materialised in",
        str((settings.data_dir / "jobs").absolute()): "the job folders' disk",
        str(settings.data_dir.absolute()): "the platform's data directory",
    }
    if settings.storage_url.startswith("file://"):
        out[settings.storage_url.removeprefix("file://")] = "the dataset store"
    return dict(sorted(out.items(), key=lambda item: -len(item[0])))


def storage_failure(exc: BaseException, places: dict[str, str]) -> str | None:
    """The sentence for an OSError of a full disk (pure), naming which storage by the first of
    ``places`` (folder -> what people call it) the failed path is under, never the path itself;
    None for any other error."""
    if not isinstance(exc, OSError) or exc.errno not in FULL_ERRNOS:
        return None
    where = "the platform's data disk"
    name = str(exc.filename or "")
    for folder, what in places.items():
        if name == folder or name.startswith(folder.rstrip("/") + "/"):
            where = what
            break
    return f"{where} is full: nothing was kept of this request; an administrator must free space there"


def install(app: FastAPI) -> None:
    @app.exception_handler(Refusal)
    async def _refusal(_request: Request, exc: Refusal) -> JSONResponse:
        return JSONResponse({"detail": clip_runs(exc.detail)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": clip_runs(describe_validation(list(exc.errors())))}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if isinstance(exc.detail, str):
            exc.detail = clip_runs(exc.detail)
        return await http_exception_handler(request, exc)

    from sqlalchemy import exc as sa

    async def _database(_request: Request, exc: Exception) -> JSONResponse:
        failure = database_failure(exc)
        if failure is None:
            raise exc
        status, sentence = failure
        log.warning("answered %d: %s (%s)", status, sentence, str(exc).splitlines()[0][:300])
        headers = {"Retry-After": str(DATABASE_RETRY_AFTER)} if status == 503 else None
        return JSONResponse({"detail": sentence}, status_code=status, headers=headers)

    app.add_exception_handler(sa.DBAPIError, _database)
    app.add_exception_handler(sa.TimeoutError, _database)

    async def _disk(request: Request, exc: Exception) -> JSONResponse:
        ctx = getattr(request.app.state, "yitong", None)
        sentence = storage_failure(exc, places(ctx.settings) if ctx is not None else {})
        if sentence is None:
            raise exc
        log.warning("answered 507: %s (%s)", sentence, exc)
        return JSONResponse({"detail": sentence}, status_code=507)

    app.add_exception_handler(OSError, _disk)

    @app.exception_handler(HubUnavailable)
    async def _hub_unavailable(_request: Request, exc: HubUnavailable) -> JSONResponse:
        log.warning("answered 503: %s", exc)
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": str(HUB_RETRY_AFTER)})

    @app.exception_handler(HubError)
    async def _hub(_request: Request, exc: HubError) -> JSONResponse:
        log.error("%s", exc)
        return JSONResponse({"detail": str(exc)}, status_code=502)
