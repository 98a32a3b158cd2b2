"""Hyperparameter search from Python: the trial API (``get_params``, ``report``, ``report_final``)
and Optuna-style search spaces (``uniform``, ``loguniform``, ``choice``, ...) that turn into NNI's
search-space format, the one the platform takes. Imports nothing heavy (kernels load it)."""

from __future__ import annotations

from .space import (
    choice,
    lognormal,
    loguniform,
    normal,
    qlognormal,
    qloguniform,
    qnormal,
    quniform,
    randint,
    space,
    suggest_categorical,
    suggest_float,
    suggest_int,
    uniform,
)
from .trial import get_params, report, report_final

__all__ = [
    "choice",
    "get_params",
    "lognormal",
    "loguniform",
    "normal",
    "qlognormal",
    "qloguniform",
    "qnormal",
    "quniform",
    "randint",
    "report",
    "report_final",
    "space",
    "suggest_categorical",
    "suggest_float",
    "suggest_int",
    "uniform",
]
