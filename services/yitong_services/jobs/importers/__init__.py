"""Importers: another system's job document -> ``(JobSpec, notes)``.

``notes`` are sentences about fields that have no counterpart (``taskRoles.worker.extras: no
counterpart, ignored``) or were changed on the way; a document that cannot be represented raises
``ImportRefused`` with the reason. Both are meant to be shown to the person as they are.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..spec_errors import JobSpecError


class ImportRefused(ValueError):
    """The document cannot become a Yitong job (a sentence for the person; a 422 at submit)."""


def load_yaml(text: str, what: str) -> dict[str, Any]:
    from ...core.limits import load_yaml as safe_load

    try:
        doc = safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ImportRefused(f"{what}: not valid YAML{where}") from None
    if not isinstance(doc, dict):
        raise ImportRefused(f"{what}: expected a map at the top level")
    return doc


def import_file(kind: str, text: str, vc: str | None = None) -> tuple[Any, list[str]]:
    """``yt job submit --from openpai|pytorchjob FILE``: the importer by name."""
    from .openpai import import_openpai
    from .pytorchjob import import_pytorchjob

    importers = {"openpai": import_openpai, "pytorchjob": import_pytorchjob}
    if kind not in importers:
        raise ImportRefused(f"unknown import format {kind!r}: use {' or '.join(importers)}")
    return importers[kind](load_yaml(text, kind), vc=vc)


__all__ = ["ImportRefused", "JobSpecError", "import_file", "load_yaml"]
