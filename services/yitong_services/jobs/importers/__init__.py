"""Importers: another system's job document -> ``(JobSpec, notes)``.

``notes`` are sentences about fields that have no counterpart (``taskRoles.worker.extras: no
counterpart, ignored``) or were changed on the way; a document that cannot be represented raises
``ImportRefused`` with the reason. Both are meant to be shown to the person as they are.
"""

from __future__ import annotations

from typing import Any

from ..spec_errors import JobSpecError
from .common import ImportRefused, load_yaml
from .openpai import import_openpai
from .pytorchjob import import_pytorchjob


def import_file(kind: str, text: str, vc: str | None = None) -> tuple[Any, list[str]]:
    """``yt job submit --from openpai|pytorchjob FILE``: the importer by name."""
    importers = {"openpai": import_openpai, "pytorchjob": import_pytorchjob}
    if kind not in importers:
        raise ImportRefused(f"unknown import format {kind!r}: use {' or '.join(importers)}")
    try:
        return importers[kind](load_yaml(text, kind), vc=vc)
    except ImportRefused:
        raise
    except (TypeError, ValueError, AttributeError, KeyError):
        # a field of the wrong shape the importer did not name (e.g. replicas: "two"); never a 500
        raise ImportRefused(
            f"{kind}: a field has a value of the wrong type or shape; check the document against "
            f"{'the OpenPAI protocol v2' if kind == 'openpai' else 'the kubeflow.org/v1 PyTorchJob schema'}"
        ) from None


__all__ = ["ImportRefused", "JobSpecError", "import_file", "load_yaml"]
