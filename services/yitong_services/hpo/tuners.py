"""NNI tuner and assessor names -> Optuna samplers and pruners (pure). Only faithful equivalents
map; every other name is refused with a sentence that names the nearest supported choice."""

from __future__ import annotations

from typing import Any

from .space import grid

TUNERS = ("TPE", "Random", "GridSearch", "CMAES")
ASSESSORS = ("Medianstop", "Hyperband")

# refused names (lower case) -> the sentence's advice
TUNER_ADVICE = {
    "anneal": "NNI's Anneal narrows a sampling distribution around the best trials, which no Optuna sampler does; the nearest supported tuner is TPE",
    "evolution": "NNI's Evolution (regularized evolution with mutation of one parameter) has no faithful Optuna sampler; the nearest supported tuner is TPE",
    "smac": "SMAC's random-forest model has no Optuna sampler; the nearest supported model-based tuner is TPE",
    "metis": "Metis has no Optuna sampler; the nearest supported model-based tuner is TPE",
    "gptuner": "GPTuner has no faithful Optuna sampler here; the nearest supported model-based tuner is TPE",
    "bohb": "BOHB is TPE plus Hyperband: use tuner TPE with assessor Hyperband",
    "hyperband": "Hyperband is an assessor here: use tuner Random (or TPE) with assessor Hyperband",
    "pbttuner": "population-based training changes a running trial's parameters, which trials-as-jobs cannot; the nearest supported tuner is Random",
    "dngotuner": "DNGO has no Optuna sampler; the nearest supported model-based tuner is TPE",
    "batchtuner": "BatchTuner runs a fixed list: use GridSearch with a choice parameter",
    "hyperopt": "use TPE (Optuna's TPE is the hyperopt algorithm)",
    "pbt": "population-based training changes a running trial's parameters, which trials-as-jobs cannot; the nearest supported tuner is Random",
}
ASSESSOR_ADVICE = {
    "curvefitting": "Curvefitting's learning-curve extrapolation has no Optuna pruner; the nearest supported assessor is Medianstop",
}
ALIASES = {"tpe": "TPE", "random": "Random", "randomsearch": "Random", "gridsearch": "GridSearch", "grid": "GridSearch"}
ALIASES |= {"cmaes": "CMAES", "cma-es": "CMAES", "cma": "CMAES", "medianstop": "Medianstop", "median": "Medianstop"}
ALIASES |= {"hyperband": "Hyperband"}


class TunerError(ValueError):
    pass


def canonical_tuner(name: str) -> str:
    key = name.lower().replace("_", "")
    if key in ALIASES and ALIASES[key] in TUNERS:
        return ALIASES[key]
    advice = TUNER_ADVICE.get(key, f"the supported tuners are {', '.join(TUNERS)}")
    raise TunerError(f"tuner {name!r} is not supported: {advice}")


def canonical_assessor(name: str) -> str:
    key = name.lower().replace("_", "")
    if key in ALIASES and ALIASES[key] in ASSESSORS:
        return ALIASES[key]
    advice = ASSESSOR_ADVICE.get(key, f"the supported assessors are {', '.join(ASSESSORS)}")
    raise TunerError(f"assessor {name!r} is not supported: {advice}")


def _int(args: dict[str, Any], key: str, default: int, lo: int = 0, hi: int = 10**6) -> int:
    v = args.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise TunerError(f"classArgs.{key}: must be an integer from {lo} to {hi}")
    return v


def sampler(name: str, args: dict[str, Any], space: dict[str, Any], seed: int) -> Any:
    import optuna

    if name == "TPE":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=_int(args, "n_startup_trials", 10, 1, 1000))
    if name == "Random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "GridSearch":
        return optuna.samplers.GridSampler(grid(space), seed=seed)
    if name == "CMAES":
        return optuna.samplers.CmaEsSampler(seed=seed, n_startup_trials=_int(args, "n_startup_trials", 1, 0, 1000))
    raise TunerError(f"tuner {name!r} is not supported")


# where each sampler keeps its random state (Optuna 5): the attributes :func:`sampler` seeds
RANDOM_STATES = {
    "TPE": ("_rng", "_random_sampler._rng"),
    "Random": ("_rng",),
    "CMAES": ("_cma_rng", "_independent_sampler._rng"),
}


def reseed(found: Any, name: str, seed: int) -> bool:
    """Give ``found`` (what :func:`sampler` built for tuner ``name``) the random state a new one
    seeded ``seed`` starts with, in place: making a sampler costs 0.1-0.3 ms (each NumPy
    RandomState is seeded from the OS first), reseeding one a few microseconds. False where that
    cannot be done exactly: GridSearch (its making shuffles the grid with that state), or an
    Optuna that keeps the state elsewhere; then the caller makes a new one."""
    from optuna.samplers._lazy_random_state import LazyRandomState

    states = []
    for path in RANDOM_STATES.get(name, ()):
        state = found
        for attr in path.split("."):
            state = getattr(state, attr, None)
        if not isinstance(state, LazyRandomState):
            return False
        states.append(state)
    for state in states:
        state.rng.seed(seed)
    return bool(states)


def check_args(
    tuner: str, assessor: str | None, args: dict[str, Any], assessor_args: dict[str, Any], space: dict
) -> None:
    """Build the sampler and pruner once so a bad classArg is refused at create time."""
    sampler(tuner, args, space, 0)
    if assessor:
        pruner(assessor, assessor_args)


def pruner(name: str | None, args: dict[str, Any]) -> Any:
    import optuna

    if name is None:
        return optuna.pruners.NopPruner()
    if name == "Medianstop":
        # NNI: start_step (steps before a trial may be stopped); trials needed before comparing
        return optuna.pruners.MedianPruner(
            n_startup_trials=_int(args, "start_trials", 1, 0, 1000),
            n_warmup_steps=_int(args, "start_step", 0, 0, 10**6),
        )
    if name == "Hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=_int(args, "min_resource", 1, 1, 10**6),
            max_resource=_int(args, "R", 60, 1, 10**6),
            reduction_factor=_int(args, "eta", 3, 2, 100),
        )
    raise TunerError(f"assessor {name!r} is not supported")
