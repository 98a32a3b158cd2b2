"""The model registry from Python: ``register`` a directory or a job's outputs, ``alias`` a
version, ``compare`` versions' metrics, ``pull`` a version's files, ``batch`` inference over a
dataset version into a new one.

>>> import yitong_lab.models as ym
>>> ym.register("vision/iris", "./model", framework="sklearn", metrics={"accuracy": 0.93})  # doctest: +SKIP
>>> ym.register("vision/iris", job=12, path="out/model")                                # doctest: +SKIP
>>> ym.alias("vision/iris@3", "production")                                               # doctest: +SKIP
>>> ym.batch("vision/iris@production", "vision/flowers@2", "vision/flowers-preds", keep=["id"], wait=600)  # doctest: +SKIP

Importing this package is cheap: httpx and blake3 load on first use.
"""

from __future__ import annotations

from typing import Any

from yitong_lab.models.sdk import Models

__all__ = ["Models", "register", "alias", "compare", "versions", "pull", "batch"]


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


def batch(ref: str, input: str, output: str, **options: Any) -> dict[str, Any]:
    return Models().batch(ref, input, output, **options)
