"""The Optuna engine over our own tables: every decision replays the experiment's trials into an
in-memory study (the tables are the only state, so a kill -9 loses nothing and a restart asks
the same questions). Optuna is imported lazily."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from . import states
from .space import sample
from .tuners import pruner, sampler


def _quiet() -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _frozen(row: dict[str, Any], maximize: bool) -> Any:
    import optuna
    from optuna.distributions import json_to_distribution
    from optuna.trial import TrialState

    state = {
        states.COMPLETE: TrialState.COMPLETE,
        states.PRUNED: TrialState.PRUNED,
        states.FAILED: TrialState.FAIL,
        states.CANCELLED: TrialState.FAIL,
    }.get(row["state"], TrialState.RUNNING)
    value = row["value"] if state == TrialState.COMPLETE else None
    if state == TrialState.COMPLETE and value is None:
        state = TrialState.FAIL
    inter = {i: v for i, v in enumerate(row["intermediate"])}
    dists = {k: json_to_distribution(v) for k, v in row["internal"].get("distributions", {}).items()}
    trial = optuna.trial.create_trial(
        state=state,
        value=value,
        params=row["internal"].get("params", {}),
        distributions=dists,
        intermediate_values=inter,
        system_attrs=row["internal"].get("system_attrs", {}),
    )
    return trial


def study(config: dict[str, Any], rows: list[dict[str, Any]], seed_offset: int = 0) -> Any:
    """An in-memory study holding ``rows`` (dicts with number, state, value, intermediate,
    internal), in trial-number order."""
    import optuna

    _quiet()
    maximize = config["objective"]["direction"] == "maximize"
    assessor = config.get("assessor")
    s = optuna.create_study(
        study_name=f"experiment-{config['name']}",  # Hyperband's brackets hash it: fixed across replays
        direction="maximize" if maximize else "minimize",
        sampler=sampler(
            config["tuner"]["name"], config["tuner"]["args"], config["space"], config["seed"] + seed_offset
        ),
        pruner=pruner(assessor["name"] if assessor else None, assessor["args"] if assessor else {}),
    )
    for row in sorted(rows, key=lambda r: r["number"]):
        s.add_trial(_frozen(row, maximize))
    return s


def ask(config: dict[str, Any], rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The next trial's ``(params in NNI's shape, internal {params, distributions})``."""
    from optuna.distributions import distribution_to_json

    # a fresh sampler per question: the seed moves on with the trial count so a random draw is
    # not repeated; GridSampler's seed orders its grid, which must stay the same for grid_id
    offset = 0 if config["tuner"]["name"] == "GridSearch" else len(rows)
    s = study(config, rows, seed_offset=offset)
    trial = s.ask()
    params = sample(trial, config["space"])
    internal = {
        "params": dict(trial.params),
        "distributions": {k: distribution_to_json(d) for k, d in trial.distributions.items()},
        # the sampler's own notes on the trial (GridSampler's grid_id): replayed with it
        "system_attrs": _jsonable(s._storage.get_trial(trial._trial_id).system_attrs),
    }
    return params, internal


def _jsonable(attrs: dict[str, Any]) -> dict[str, Any]:
    import json

    out = {}
    for k, v in attrs.items():
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            continue
        out[k] = v
    return out


def should_prune(config: dict[str, Any], rows: list[dict[str, Any]], number: int) -> bool:
    """Whether the assessor stops the running trial ``number`` at its last reported step."""
    return prune_decision(config, rows, number)[0]


def prune_decision(config: dict[str, Any], rows: list[dict[str, Any]], number: int) -> tuple[bool, dict[str, Any]]:
    """``(prune?, the trial's system attrs after the decision)``: pruners note what they saw on the
    trial (successive halving's ``completed_rung_*``); the caller keeps those notes with the trial
    so later replays compare against them."""
    if not config.get("assessor"):
        return False, {}
    s = study(config, rows)
    frozen = next(t for t in s.get_trials(deepcopy=False) if t.number == number)
    if frozen.last_step is None:
        return False, dict(frozen.system_attrs)
    decision = bool(s.pruner.prune(s, frozen))
    return decision, _jsonable(s._storage.get_trial(frozen._trial_id).system_attrs)


def importance(config: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, float]:
    """Optuna's parameter importance (fANOVA) over the complete trials; {} with fewer than two."""
    import optuna

    done = [r for r in rows if r["state"] == states.COMPLETE and r["value"] is not None]
    if len(done) < 2:
        return {}
    s = study(config, done)
    try:
        return {k: float(v) for k, v in optuna.importance.get_param_importances(s).items()}
    except (RuntimeError, ValueError, ZeroDivisionError):
        return {}


_IMPORTANCE: OrderedDict[tuple[Any, ...], dict[str, float]] = OrderedDict()
_IMPORTANCE_LOCK = threading.Lock()
IMPORTANCE_CACHED = 64  # experiments whose last importance is kept


def importance_cached(experiment_id: int, config: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, float]:
    """:func:`importance`, computed again only when the experiment's complete trials changed (a
    view polling a running experiment asks for it often; fANOVA fits a forest each time)."""
    done = tuple(
        sorted((r["number"], r["value"]) for r in rows if r["state"] == states.COMPLETE and r["value"] is not None)
    )
    key = (experiment_id, done)
    with _IMPORTANCE_LOCK:
        if key in _IMPORTANCE:
            _IMPORTANCE.move_to_end(key)
            return dict(_IMPORTANCE[key])
    out = importance(config, rows)
    with _IMPORTANCE_LOCK:
        _IMPORTANCE[key] = out
        while len(_IMPORTANCE) > IMPORTANCE_CACHED:
            _IMPORTANCE.popitem(last=False)
    return dict(out)
