"""What every request handler needs, built once by ``create_app`` (``app.state.yitong``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request

from ..datasets.storage import Storage
from ..vcs.quantities import Resources
from .db import Database
from .hub import HubClient
from .settings import Settings


@dataclass
class Context:
    settings: Settings
    db: Database
    hub: HubClient
    inventory: Resources
    prefix: str = "/services/yitong/"
    service_name: str = "yitong"
    oauth_client_id: str = "service-yitong"
    cookie_secret: bytes = b""
    access_scopes: frozenset[str] = field(default_factory=frozenset)
    storage: Storage = None  # type: ignore[assignment]  # built by create_app

    @property
    def cookie_name(self) -> str:
        return f"{self.oauth_client_id}-token"


def get_context(request: Request) -> Context:
    return request.app.state.yitong


async def context(request: Request) -> Context:
    """:func:`get_context` as a FastAPI dependency: ``async``, because FastAPI runs a plain
    ``def`` dependency in the thread pool, one hop for every request."""
    return request.app.state.yitong
