"""What every importer shares: its refusal and reading a YAML document safely."""

from __future__ import annotations

from typing import Any

import yaml


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
