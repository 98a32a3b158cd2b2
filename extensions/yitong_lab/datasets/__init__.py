"""Versioned datasets from Python: ``commit`` a directory, ``pull`` or ``open`` a version.

>>> import yitong_lab.datasets as yd
>>> yd.commit("./imgs", "vision/mnist", message="cleaned labels")   # doctest: +SKIP
>>> path = yd.open("vision/mnist@v3")   # a read-only directory     # doctest: +SKIP

Each function uses a :class:`Datasets` of a default :class:`~yitong_lab.client.Client`
(configured from the environment); see :mod:`yitong_lab.datasets.sdk` for everything else.
Importing this package is cheap: httpx, blake3, tqdm and ipywidgets load on first use.
"""

from __future__ import annotations

from typing import Any

from yitong_lab.datasets.sdk import Datasets

__all__ = ["Datasets", "commit", "pull", "open", "versions", "diff"]


def commit(path: Any, dataset: str, message: str = "", **options: Any) -> dict[str, Any]:
    return Datasets().commit(path, dataset, message, **options)


def pull(ref: str, directory: Any, **options: Any) -> dict[str, Any]:
    return Datasets().pull(ref, directory, **options)


def open(ref: str) -> str:
    return Datasets().open(ref)


def versions(dataset: str) -> list[dict[str, Any]]:
    return Datasets().versions(dataset)


def diff(a: str, b: str | None = None) -> dict[str, Any]:
    return Datasets().diff(a, b)
