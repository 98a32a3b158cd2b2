"""Optuna-style search spaces written in Python -> NNI's search-space format (pure).

``space(lr=loguniform(1e-4, 1e-1), layers=randint(1, 5))`` or
``space(lambda t: {"lr": t.suggest_float("lr", 1e-4, 1e-1, log=True)})``: a function of a
recorder with Optuna's ``suggest_*`` names, run once to read the space (a flat space: branches
that depend on an earlier value need ``choice`` with nested maps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Param = dict[str, Any]


def choice(*options: Any) -> Param:
    return {
        "_type": "choice",
        "_value": list(options[0] if len(options) == 1 and isinstance(options[0], list) else options),
    }


def randint(low: int, high: int) -> Param:
    """An integer in [low, high) (NNI's convention)."""
    return {"_type": "randint", "_value": [low, high]}


def uniform(low: float, high: float) -> Param:
    return {"_type": "uniform", "_value": [low, high]}


def quniform(low: float, high: float, q: float) -> Param:
    return {"_type": "quniform", "_value": [low, high, q]}


def loguniform(low: float, high: float) -> Param:
    return {"_type": "loguniform", "_value": [low, high]}


def qloguniform(low: float, high: float, q: float) -> Param:
    return {"_type": "qloguniform", "_value": [low, high, q]}


def normal(mu: float, sigma: float) -> Param:
    return {"_type": "normal", "_value": [mu, sigma]}


def qnormal(mu: float, sigma: float, q: float) -> Param:
    return {"_type": "qnormal", "_value": [mu, sigma, q]}


def lognormal(mu: float, sigma: float) -> Param:
    return {"_type": "lognormal", "_value": [mu, sigma]}


def qlognormal(mu: float, sigma: float, q: float) -> Param:
    return {"_type": "qlognormal", "_value": [mu, sigma, q]}


def suggest_float(low: float, high: float, *, log: bool = False, step: float | None = None) -> Param:
    if log and step:
        return qloguniform(low, high, step)
    if log:
        return loguniform(low, high)
    return quniform(low, high, step) if step else uniform(low, high)


def suggest_int(low: int, high: int, *, log: bool = False, step: int = 1) -> Param:
    """Optuna's inclusive ``[low, high]``."""
    if log:
        return qloguniform(low, high, 1)
    return randint(low, high + 1) if step == 1 else quniform(low, high, step)


def suggest_categorical(options: list[Any]) -> Param:
    return choice(list(options))


class _Recorder:
    def __init__(self) -> None:
        self.space: dict[str, Param] = {}

    def suggest_float(
        self, name: str, low: float, high: float, *, log: bool = False, step: float | None = None
    ) -> float:
        self.space[name] = suggest_float(low, high, log=log, step=step)
        return low

    def suggest_int(self, name: str, low: int, high: int, *, log: bool = False, step: int = 1) -> int:
        self.space[name] = suggest_int(low, high, log=log, step=step)
        return low

    def suggest_categorical(self, name: str, options: list[Any]) -> Any:
        self.space[name] = suggest_categorical(options)
        return options[0]


def space(fn: Callable[[Any], Any] | None = None, /, **params: Param) -> dict[str, Param]:
    """NNI's search-space map from keyword parameters, or from a function using ``suggest_*``."""
    if fn is not None:
        recorder = _Recorder()
        fn(recorder)
        return recorder.space | params
    return dict(params)
