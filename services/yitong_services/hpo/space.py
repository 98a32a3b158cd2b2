"""NNI's search-space format (``search_space.json``): checking it, and sampling it with an Optuna
trial (pure). Every NNI type: choice (with nested spaces), randint, uniform, quniform, loguniform,
qloguniform, normal, qnormal, lognormal, qlognormal.

Optuna has no unbounded normal distribution: a ``normal`` parameter is sampled as its quantile
``u`` in (0, 1) (a uniform Optuna parameter named ``<name>.q``) and mapped through the normal's
inverse CDF, which gives NNI's distribution under random sampling and a bounded space to TPE.
``q`` types round to the nearest multiple of ``q`` as NNI does (``round(x / q) * q``, clipped to
the bounds for the bounded ones).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

TYPES = (
    "choice",
    "randint",
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "normal",
    "qnormal",
    "lognormal",
    "qlognormal",
)
ARITY = {
    "randint": 2,
    "uniform": 2,
    "quniform": 3,
    "loguniform": 2,
    "qloguniform": 3,
    "normal": 2,
    "qnormal": 3,
    "lognormal": 2,
    "qlognormal": 3,
}
MAX_PARAMS, MAX_CHOICES, MAX_DEPTH = 200, 1000, 5
EPS = 1e-9


class SpaceError(ValueError):
    """A search space that cannot be used; the message names the parameter."""


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def check(space: Any, where: str = "space", depth: int = 0) -> int:
    """Raise SpaceError naming what is wrong; return the number of parameters (nested counted)."""
    if depth > MAX_DEPTH:
        raise SpaceError(f"{where}: nested choices go deeper than {MAX_DEPTH} levels")
    if not isinstance(space, dict) or (depth == 0 and not space):
        raise SpaceError(f"{where}: must be a map of parameter name to {{_type, _value}}")
    count = 0
    for name, item in space.items():
        here = f"{where}.{name}"
        if depth and name == "_name":
            continue
        if not isinstance(name, str) or not 0 < len(name) <= 64:
            raise SpaceError(f"{here}: a parameter name is a string of 1 to 64 characters")
        if not isinstance(item, dict) or "_type" not in item or "_value" not in item:
            raise SpaceError(f'{here}: must be {{"_type": ..., "_value": [...]}}')
        kind, value = item["_type"], item["_value"]
        if kind not in TYPES:
            raise SpaceError(f"{here}: unknown _type {kind!r}; NNI's types are {', '.join(TYPES)}")
        if not isinstance(value, list) or not value:
            raise SpaceError(f"{here}: _value must be a non-empty list")
        count += 1
        if kind == "choice":
            if len(value) > MAX_CHOICES:
                raise SpaceError(f"{here}: at most {MAX_CHOICES} choices")
            for i, option in enumerate(value):
                if isinstance(option, dict):
                    count += check({k: v for k, v in option.items() if k != "_name"}, f"{here}[{i}]", depth + 1)
                elif not (option is None or isinstance(option, str | bool) or _number(option)):
                    raise SpaceError(f"{here}: choice {i} must be a number, a string, a boolean, null or a map")
            continue
        if len(value) != ARITY[kind] or not all(_number(v) for v in value):
            raise SpaceError(f"{here}: {kind} takes {ARITY[kind]} numbers")
        if kind in ("normal", "qnormal", "lognormal", "qlognormal"):
            if value[1] <= 0:
                raise SpaceError(f"{here}: sigma must be above 0")
        elif value[0] >= value[1]:
            raise SpaceError(f"{here}: the lower bound must be below the upper bound")
        if kind in ("loguniform", "qloguniform") and value[0] <= 0:
            raise SpaceError(f"{here}: {kind} bounds must be above 0")
        if kind.startswith("q") and value[2] <= 0:
            raise SpaceError(f"{here}: q must be above 0")
        if kind == "randint" and not all(float(v).is_integer() for v in value):
            raise SpaceError(f"{here}: randint bounds must be integers")
    if depth == 0 and count > MAX_PARAMS:
        raise SpaceError(f"{where}: at most {MAX_PARAMS} parameters")
    return count


def _q(x: float, q: float, lo: float | None = None, hi: float | None = None) -> float:
    x = round(x / q) * q
    if lo is not None and hi is not None:
        x = min(max(x, lo), hi)
    return x


def _label(option: Any, i: int) -> Any:
    if isinstance(option, dict):
        return option.get("_name", i)
    return option


def sample(trial: Any, space: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Parameters in NNI's shape, drawn through ``trial.suggest_*`` (define-by-run: a nested
    choice's inner parameters are named ``<outer>/<option>/<inner>``)."""
    out: dict[str, Any] = {}
    for name, item in space.items():
        if name == "_name":
            continue
        key = prefix + name
        kind, v = item["_type"], item["_value"]
        if kind == "choice":
            if any(isinstance(o, dict) for o in v):
                labels = [_label(o, i) for i, o in enumerate(v)]
                index = trial.suggest_categorical(key, list(range(len(v))))
                option = v[index]
                if isinstance(option, dict):
                    inner = {k: o for k, o in option.items() if k != "_name"}
                    nested = sample(trial, inner, f"{key}/{labels[index]}/")
                    out[name] = ({"_name": option["_name"]} if "_name" in option else {}) | nested
                else:
                    out[name] = option
            else:
                out[name] = trial.suggest_categorical(key, list(v))
        elif kind == "randint":
            out[name] = trial.suggest_int(key, int(v[0]), int(v[1]) - 1)
        elif kind == "uniform":
            out[name] = trial.suggest_float(key, v[0], v[1])
        elif kind == "quniform":
            out[name] = _q(trial.suggest_float(key, v[0], v[1]), v[2], v[0], v[1])
        elif kind == "loguniform":
            out[name] = trial.suggest_float(key, v[0], v[1], log=True)
        elif kind == "qloguniform":
            out[name] = _q(trial.suggest_float(key, v[0], v[1], log=True), v[2], v[0], v[1])
        else:  # the normal family, through the quantile
            u = trial.suggest_float(key + ".q", EPS, 1 - EPS)
            x = NormalDist(v[0], v[1]).inv_cdf(u)
            if kind in ("lognormal", "qlognormal"):
                x = math.exp(x)
            out[name] = _q(x, v[2]) if kind in ("qnormal", "qlognormal") else x
        if isinstance(out[name], float) and kind in ("quniform", "qloguniform", "qnormal", "qlognormal"):
            out[name] = round(out[name], 12)
    return out


def grid(space: dict[str, Any]) -> dict[str, list[Any]]:
    """The Optuna GridSampler space of a flat discrete space (choice, randint, quniform); a
    SpaceError names the first parameter that has no finite grid."""
    out: dict[str, list[Any]] = {}
    for name, item in space.items():
        kind, v = item["_type"], item["_value"]
        if kind == "choice" and not any(isinstance(o, dict) for o in v):
            out[name] = list(v)
        elif kind == "randint":
            out[name] = list(range(int(v[0]), int(v[1])))
        elif kind == "quniform":
            steps = int(math.floor((v[1] - v[0]) / v[2] + EPS))
            out[name] = [round(v[0] + i * v[2], 12) for i in range(steps + 1)]
        else:
            raise SpaceError(
                f"space.{name}: GridSearch takes choice (not nested), randint and quniform parameters; "
                f"{kind} has no finite grid: use TPE or Random"
            )
    return out
