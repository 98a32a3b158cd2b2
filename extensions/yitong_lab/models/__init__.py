"""The model registry from Python: ``register`` a directory or a job's outputs, ``alias`` a
version, ``compare`` versions' metrics, ``pull`` a version's files.

>>> import yitong_lab.models as ym
>>> ym.register("vision/iris", "./model", framework="sklearn", metrics={"accuracy": 0.93})  # doctest: +SKIP
>>> ym.register("vision/iris", job=12, path="out/model")                                # doctest: +SKIP
>>> ym.alias("vision/iris@3", "production")                                               # doctest: +SKIP

Importing this package is cheap: httpx and blake3 load on first use.
"""

from __future__ import annotations

from typing import Any

from yitong_lab.models.sdk import Models

__all__ = ["Models", "register", "alias", "compare", "versions", "pull"]


def register(model: str, path: Any = None, **options: Any) -> dict[str, Any]:
    return Models().register(model, path, **options)


def alias(ref: str, name: str) -> dict[str, Any]:
    return Models().alias(ref, name)


def compare(model: str, versions: list[str] | None = None) -> dict[str, Any]:
    return Models().compare(model, versions)


def versions(model: str) -> list[dict[str, Any]]:
    return Models().versions(model)


def pull(ref: str, directory: Any, **options: Any) -> dict[str, Any]:
    return Models().pull(ref, directory, **options)
