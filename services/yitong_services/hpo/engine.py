"""The Optuna engine over our own tables: every decision replays the experiment's trials into an
in-memory study (the tables are the only state, so a kill -9 loses nothing and a restart asks
the same questions). Optuna is imported lazily.

A replay of n trials costs ~1 ms a trial, so asking for each of N trials would cost O(N^2). With
a ``key`` (the experiment's id), the study of the last question is kept (:class:`Replay`) and
brought up to date with what changed since: new trials are added, a running trial's new steps,
notes and end are applied; anything else (a row that went back, a finished trial that changed,
a trial that vanished) rebuilds it from the rows. Either way the study holds exactly the rows."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from . import states
from .space import sample
from .tuners import pruner, reseed, sampler


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


def _fingerprint(row: dict[str, Any]) -> tuple[Any, ...]:
    internal = row["internal"]
    return (
        row["state"],
        row["value"],
        tuple(row["intermediate"]),
        json.dumps(internal.get("params", {}), sort_keys=True),
        json.dumps(internal.get("system_attrs", {}), sort_keys=True),
    )


def _config_key(config: dict[str, Any]) -> str:
    fields = ("name", "objective", "tuner", "assessor", "space", "seed")
    return json.dumps({k: config.get(k) for k in fields}, sort_keys=True, default=str)


class Replay:
    """One experiment's study between questions, and what each of its trials was built from."""

    def __init__(self, config_key: str) -> None:
        self.config_key = config_key
        self.study: Any = None
        self.seen: dict[int, tuple[Any, ...]] = {}  # trial number -> fingerprint of its row
        self.ids: dict[int, int] = {}  # trial number -> the study storage's trial id
        # trial number -> the row object last applied: the caller hands an ended trial's row over
        # as the same object each time (hpo/driver.py keeps them), so it is not fingerprinted again
        self.objs: dict[int, dict[str, Any]] = {}
        # the study's sampler, given each question the random state a new one would start with:
        # it lives as long as the study (its search-space cache follows that study's trials)
        self.sampler: Any = None
        self.lock = threading.Lock()

    def rebuild(self, config: dict[str, Any], rows: list[dict[str, Any]]) -> Any:
        self.study, self.sampler = study(config, rows), None
        self.seen = {r["number"]: _fingerprint(r) for r in rows}
        self.objs = {r["number"]: r for r in rows}
        self.ids = {t.number: t._trial_id for t in self.study.get_trials(deepcopy=False)}
        return self.study

    def sync(self, config: dict[str, Any], rows: list[dict[str, Any]]) -> Any:
        """The study holding exactly ``rows``: updated in place where it can be, else rebuilt."""
        rows = sorted(rows, key=lambda r: r["number"])
        numbers = {r["number"] for r in rows}
        if self.study is None or any(n not in numbers for n in self.seen):
            return self.rebuild(config, rows)
        maximize = config["objective"]["direction"] == "maximize"
        for row in rows:
            n = row["number"]
            if self.objs.get(n) is row:
                continue
            fp = _fingerprint(row)
            self.objs[n] = row
            if n not in self.seen:
                if n != len(self.seen):  # trials are numbered in order; a gap means another history
                    return self.rebuild(config, rows)
                self.study.add_trial(_frozen(row, maximize))
                self.ids[n] = self.study._storage.get_trial_id_from_study_id_trial_number(self.study._study_id, n)
                self.seen[n] = fp
            elif self.seen[n] != fp:
                if not self._update(self.ids[n], row, maximize):
                    return self.rebuild(config, rows)
                self.seen[n] = fp
        return self.study

    def _update(self, trial_id: int, row: dict[str, Any], maximize: bool) -> bool:
        """Apply a running trial's new steps, notes and end; False when the change is not that."""
        storage = self.study._storage
        trial = storage.get_trial(trial_id)
        target = _frozen(row, maximize)
        if trial.state.is_finished() or trial.params != target.params:
            return False
        old, new = trial.intermediate_values, target.intermediate_values
        if any(new.get(step) != value for step, value in old.items()):
            return False
        if any(key not in target.system_attrs for key in trial.system_attrs):
            return False
        for step in sorted(set(new) - set(old)):
            storage.set_trial_intermediate_value(trial_id, step, new[step])
        for key, value in target.system_attrs.items():
            if trial.system_attrs.get(key) != value:
                storage.set_trial_system_attr(trial_id, key, value)
        if target.state.is_finished():
            storage.set_trial_state_values(trial_id, target.state, target.values)
        return True

    def asked(self, trial: Any, internal: dict[str, Any]) -> None:
        """``study.ask()`` added this trial: it is the row the caller stores (running, no steps)."""
        row: dict[str, Any] = {"state": states.RUNNING, "value": None, "intermediate": [], "internal": internal}
        self.seen[trial.number] = _fingerprint(row)
        self.ids[trial.number] = trial._trial_id


_REPLAYS: OrderedDict[Any, Replay] = OrderedDict()
_REPLAYS_LOCK = threading.Lock()
REPLAYS_KEPT = 32  # experiments whose study is kept between questions


def _replay(key: Any, config: dict[str, Any]) -> Replay:
    config_key = _config_key(config)
    with _REPLAYS_LOCK:
        found = _REPLAYS.get(key)
        if found is None or found.config_key != config_key:
            found = _REPLAYS[key] = Replay(config_key)
        _REPLAYS.move_to_end(key)
        while len(_REPLAYS) > REPLAYS_KEPT:
            _REPLAYS.popitem(last=False)
        return found


def ask(config: dict[str, Any], rows: list[dict[str, Any]], key: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The next trial's ``(params in NNI's shape, internal {params, distributions})``; ``key``
    (the experiment's id) keeps the study for the next question."""
    # a sampler seeded anew per question: the seed moves on with the trial count so a random draw
    # is not repeated; GridSampler's seed orders its grid, which must stay the same for grid_id
    tuner = config["tuner"]["name"]
    offset = 0 if tuner == "GridSearch" else len(rows)
    if key is None:
        return _ask(study(config, rows, seed_offset=offset), config, None)
    replay = _replay(key, config)
    with replay.lock:
        s = replay.sync(config, rows)
        seed = config["seed"] + offset
        if replay.sampler is None or not reseed(replay.sampler, tuner, seed):
            replay.sampler = sampler(tuner, config["tuner"]["args"], config["space"], seed)
        s.sampler = replay.sampler
        try:
            return _ask(s, config, replay)
        except BaseException:
            replay.study = None  # half-asked: build it again next time
            raise


def _ask(s: Any, config: dict[str, Any], replay: Replay | None) -> tuple[dict[str, Any], dict[str, Any]]:
    from optuna.distributions import distribution_to_json

    trial = s.ask()
    params = sample(trial, config["space"])
    internal = {
        "params": dict(trial.params),
        "distributions": {k: distribution_to_json(d) for k, d in trial.distributions.items()},
        # the sampler's own notes on the trial (GridSampler's grid_id): replayed with it
        "system_attrs": _jsonable(s._storage.get_trial(trial._trial_id).system_attrs),
    }
    if replay is not None:
        replay.asked(trial, internal)
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


def prune_decision(
    config: dict[str, Any], rows: list[dict[str, Any]], number: int, key: Any = None
) -> tuple[bool, dict[str, Any]]:
    """``(prune?, the trial's system attrs after the decision)``: pruners note what they saw on the
    trial (successive halving's ``completed_rung_*``); the caller keeps those notes with the trial
    so later replays compare against them. ``key``: as for :func:`ask`."""
    if not config.get("assessor"):
        return False, {}
    if key is None:
        return _prune(study(config, rows), number)
    replay = _replay(key, config)
    with replay.lock:
        s = replay.sync(config, rows)
        assessor = config["assessor"]
        s.pruner = pruner(assessor["name"], assessor["args"])  # a fresh one, as a replay has
        decision, attrs = _prune(s, number)
        # the pruner's notes are in the study now; the caller stores them with the row
        trial = next(t for t in rows if t["number"] == number)
        replay.seen[number] = _fingerprint({**trial, "internal": {**trial["internal"], "system_attrs": attrs}})
        return decision, attrs


def _prune(s: Any, number: int) -> tuple[bool, dict[str, Any]]:
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
