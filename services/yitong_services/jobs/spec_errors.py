"""Person-readable spec errors: each names the field (``spec.nodes: must be at least 1``)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


class JobSpecError(ValueError):
    """A spec a person must fix: ``errors`` are sentences naming the field (``spec.nodes: ...``)."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def _where(loc: tuple[Any, ...]) -> str:
    out = "spec"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _sentence(err: ErrorDetails) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in ("greater_than_equal", "greater_than"):
        return f"must be at least {ctx.get('ge', ctx.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return f"must be at most {ctx.get('le', ctx.get('lt'))}"
    if kind.startswith("int_"):
        return "must be a whole number"
    if kind == "enum":
        return f"must be one of {ctx.get('expected')}"
    if kind in ("model_type", "dict_type"):
        return "must be a map"
    if kind == "list_type":
        return "must be a list"
    return str(err["msg"]).removeprefix("Value error, ")


def describe(error: ValidationError) -> list[str]:
    return [f"{_where(e['loc'])}: {_sentence(e)}" for e in error.errors()]
