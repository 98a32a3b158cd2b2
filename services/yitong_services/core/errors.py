"""Errors as JSON ``{"detail": "<sentence>"}`` (validation errors too)."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from .hub import HubError

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


def install(app: FastAPI) -> None:
    @app.exception_handler(Refusal)
    async def _refusal(_request: Request, exc: Refusal) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": describe_validation(list(exc.errors()))}, status_code=422)

    @app.exception_handler(HubError)
    async def _hub(_request: Request, exc: HubError) -> JSONResponse:
        log.error("%s", exc)
        return JSONResponse({"detail": str(exc)}, status_code=502)
