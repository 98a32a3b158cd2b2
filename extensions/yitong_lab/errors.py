"""The one error every client call raises (stdlib only: the SDK, CLI and magics import it cheaply)."""

from __future__ import annotations


class YitongError(Exception):
    """A refused or failed API call: ``status`` (0 when nothing answered) and ``detail``."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail

    def __str__(self) -> str:
        return self.detail
