"""The pure parts of HPO: NNI search spaces of every type, NNI v2 configs shaped like NNI's own
examples, the tuner/assessor mapping and its refusals, the replay engine."""

from __future__ import annotations

import math
import os

import pytest
import yaml

from yitong_lab import hpo as sdk
from yitong_services.hpo import engine, space, states
from yitong_services.hpo.nni_config import NniConfigError, from_nni
from yitong_services.hpo.schemas import ExperimentSpec
from yitong_services.hpo.tuners import TunerError, canonical_assessor, canonical_tuner

EVERY_TYPE = {
    "optimizer": {
        "_type": "choice",
        "_value": [
            {
                "_name": "sgd",
                "lr": {"_type": "loguniform", "_value": [1e-4, 1e-1]},
                "momentum": {"_type": "uniform", "_value": [0, 1]},
            },
            {"_name": "adam", "beta": {"_type": "quniform", "_value": [0.8, 0.99, 0.01]}},
            "none",
        ],
    },
    "batch": {"_type": "choice", "_value": [16, 32, 64]},
    "layers": {"_type": "randint", "_value": [1, 5]},
    "dropout": {"_type": "uniform", "_value": [0.1, 0.5]},
    "hidden": {"_type": "quniform", "_value": [32, 256, 32]},
    "lr": {"_type": "loguniform", "_value": [1e-5, 1e-1]},
    "units": {"_type": "qloguniform", "_value": [8, 1024, 8]},
    "bias": {"_type": "normal", "_value": [0, 1]},
    "shift": {"_type": "qnormal", "_value": [10, 2, 0.5]},
    "scale": {"_type": "lognormal", "_value": [0, 1]},
    "width": {"_type": "qlognormal", "_value": [2, 0.5, 1]},
}

# NNI's examples/trials/mnist-pytorch/config.yml, as shipped (search space inlined by the client)
MNIST = """
searchSpace:
  batch_size: {_type: choice, _value: [16, 32, 64, 128]}
  hidden_size: {_type: choice, _value: [128, 256, 512, 1024]}
  lr: {_type: choice, _value: [0.0001, 0.001, 0.01, 0.1]}
  momentum: {_type: uniform, _value: [0, 1]}
trialCommand: python3 mnist.py
trialCodeDirectory: .
trialGpuNumber: 0
trialConcurrency: 1
maxExperimentDuration: 1h
maxTrialNumber: 10
tuner:
  name: TPE
  classArgs:
    optimize_mode: maximize
assessor:
  name: Medianstop
  classArgs:
    optimize_mode: maximize
    start_step: 5
trainingService:
  platform: local
"""


def rows_of(config, n):
    rows = []
    for i in range(n):
        params, internal = engine.ask(config, rows)
        rows.append(
            {
                "number": i,
                "state": states.COMPLETE,
                "value": float(i),
                "intermediate": [],
                "internal": internal,
                "params": params,
            }
        )
    return rows


def config_of(space_doc, tuner="Random", **extra):
    doc = {"name": "e", "vc": "v", "space": space_doc, "tuner": {"name": tuner}, "template": {}} | extra
    return ExperimentSpec.model_validate(doc).model_dump(mode="json")


def test_every_nni_type_samples_within_its_law():
    assert space.check(EVERY_TYPE) == 14
    config = config_of(EVERY_TYPE)
    for row in rows_of(config, 30):
        p = row["params"]
        assert p["batch"] in (16, 32, 64) and 1 <= p["layers"] <= 4 and 0.1 <= p["dropout"] <= 0.5
        assert p["hidden"] % 32 == 0 and 32 <= p["hidden"] <= 256
        assert 1e-5 <= p["lr"] <= 1e-1 and p["units"] % 8 == 0 and 8 <= p["units"] <= 1024
        assert math.isfinite(p["bias"]) and (p["shift"] / 0.5).is_integer() and p["scale"] > 0
        assert float(p["width"]).is_integer()
        opt = p["optimizer"]
        assert opt == "none" or opt["_name"] in ("sgd", "adam")
        if isinstance(opt, dict) and opt["_name"] == "sgd":
            assert set(opt) == {"_name", "lr", "momentum"}
        if isinstance(opt, dict) and opt["_name"] == "adam":
            assert 0.8 <= opt["beta"] <= 0.99
    # the replay is deterministic: the same rows ask the same next trial
    rows = rows_of(config, 5)
    assert engine.ask(config, rows)[0] == engine.ask(config, rows)[0]


def test_tpe_and_grid_replay():
    grid = config_of(
        {"a": {"_type": "choice", "_value": [1, 2, 3]}, "b": {"_type": "randint", "_value": [0, 2]}}, "GridSearch"
    )
    seen = [(r["params"]["a"], r["params"]["b"]) for r in rows_of(grid, 6)]
    assert sorted(seen) == [(a, b) for a in (1, 2, 3) for b in (0, 1)]  # each point once
    tpe = config_of(EVERY_TYPE, "TPE")
    assert len(rows_of(tpe, 12)) == 12


@pytest.mark.parametrize(
    "bad,words",
    [
        ({"x": {"_type": "uniform", "_value": [1, 0]}}, "lower bound"),
        ({"x": {"_type": "loguniform", "_value": [0, 1]}}, "above 0"),
        ({"x": {"_type": "normal", "_value": [0, -1]}}, "sigma"),
        ({"x": {"_type": "randint", "_value": [0.5, 3]}}, "integers"),
        ({"x": {"_type": "choice", "_value": []}}, "non-empty"),
        ({"x": {"_type": "beta", "_value": [1, 2]}}, "unknown _type"),
    ],
)
def test_bad_spaces_are_refused_with_the_parameter(bad, words):
    with pytest.raises(space.SpaceError, match=words) as e:
        space.check(bad)
    assert "space.x" in str(e.value)


def test_grid_refuses_continuous():
    with pytest.raises(ValueError, match="no finite grid: use TPE or Random"):
        config_of({"x": {"_type": "uniform", "_value": [0, 1]}}, "GridSearch")


@pytest.mark.parametrize(
    "name,nearest",
    [
        ("Anneal", "TPE"),
        ("Evolution", "TPE"),
        ("SMAC", "TPE"),
        ("BOHB", "Hyperband"),
        ("PBTTuner", "Random"),
        ("Hyperband", "assessor"),
    ],
)
def test_unsupported_tuners_name_the_nearest(name, nearest):
    with pytest.raises(TunerError, match=nearest):
        canonical_tuner(name)


def test_mapped_names():
    assert [canonical_tuner(n) for n in ("tpe", "Random", "GridSearch", "CMAES")] == [
        "TPE",
        "Random",
        "GridSearch",
        "CMAES",
    ]
    assert canonical_assessor("Medianstop") == "Medianstop" and canonical_assessor("Hyperband") == "Hyperband"
    with pytest.raises(TunerError, match="Medianstop"):
        canonical_assessor("Curvefitting")


def test_nni_mnist_config_maps():
    doc, notes = from_nni(yaml.safe_load(MNIST), "vision")
    spec = ExperimentSpec.model_validate(doc)
    assert (spec.tuner.name, spec.assessor.name, spec.assessor.args) == ("TPE", "Medianstop", {"start_step": 5})
    assert spec.objective.direction == "maximize" and spec.max_duration == 3600
    assert (spec.concurrency, spec.max_trials, spec.template["command"]) == (1, 10, "python3 mnist.py")
    assert spec.code == {"path": "."} and notes == []
    remote = yaml.safe_load(MNIST) | {
        "trainingService": {"platform": "remote"},
        "tuner": {"name": "Random", "classArgs": {"optimize_mode": "minimize", "seed": 3}},
    }
    doc, notes = from_nni(remote, "vision")
    assert doc["objective"]["direction"] == "minimize" and doc["seed"] == 3 and "remote" in notes[0]
    for broken, words in (
        (
            {k: v for k, v in yaml.safe_load(MNIST).items() if k != "searchSpace"} | {"searchSpaceFile": "s.json"},
            "client reads the file",
        ),
        (yaml.safe_load(MNIST) | {"useAnnotation": True}, "annotations"),
        (yaml.safe_load(MNIST) | {"tuner": {"name": "TPE", "classArgs": {"optimize_mode": "up"}}}, "optimize_mode"),
    ):
        with pytest.raises(NniConfigError, match=words):
            from_nni(broken, "vision")


@pytest.mark.parametrize(
    "template, imports, heads",
    [
        ({}, ["numpy", "torch"], []),
        ({}, [], []),
        (
            {},
            ["lightgbm", "numpy"],
            ["trialCodeDirectory: the trial code imports lightgbm, which the trials' environment (kernel python3"],
        ),
        (
            {"environment": {"kernel": "torch"}},
            ["nni"],
            [
                "trialCodeDirectory: the trial code imports nni, which the trials' environment (kernel torch",
                "trialCodeDirectory: without the nni package",
            ],
        ),
        (
            {"environment": {"image": "pytorch/pytorch:2.5.1"}},
            ["nni", "torch"],
            ["trialCodeDirectory: the trial code imports nni, torch; the image pytorch/pytorch:2.5.1 must have them"],
        ),
        (
            {"command": "PYTHONPATH=$HOME/trial-packages python3 main.py"},
            ["lightgbm"],
            [
                "trialCodeDirectory: the trial code imports lightgbm; the PYTHONPATH the trial sets (beside the platform's"
            ],
        ),
        (
            {"command": "/opt/nni/bin/python mnist.py"},
            ["nni"],
            [
                "trialCodeDirectory: the trial code imports nni; /opt/nni/bin/python, which trialCommand runs, must have them"
            ],
        ),
    ],
)
def test_nni_package_notes(template, imports, heads):
    """The trial code's imports against the trials' environment (here: one with numpy and torch)."""
    config = yaml.safe_load(MNIST) | {"yitong": {"trial_imports": imports, "template": template}}
    if "command" in template:
        config["trialCommand"] = template.pop("command")
    _, notes = from_nni(config, "vision", importable={"numpy", "torch"}.__contains__)
    assert [n[: len(h)] for n, h in zip(notes, heads, strict=False)] == heads and len(notes) == len(heads), notes
    _, notes = from_nni(config, "vision")  # the caller cannot tell (Kubernetes): the image must have them
    assert bool(notes) == bool(imports)
    with pytest.raises(NniConfigError, match="yitong.trial_imports: a list of module names"):
        from_nni(yaml.safe_load(MNIST) | {"yitong": {"trial_imports": ["a b"]}}, "vision")


def test_sdk_spaces_are_nni_spaces():
    s = sdk.space(lr=sdk.loguniform(1e-4, 1e-1), layers=sdk.randint(1, 4), act=sdk.choice("relu", "tanh"))
    assert space.check(s) == 3
    fn = sdk.space(lambda t: {"lr": t.suggest_float("lr", 1e-4, 1e-1, log=True), "n": t.suggest_int("n", 1, 3)})
    assert fn == {"lr": {"_type": "loguniform", "_value": [1e-4, 1e-1]}, "n": {"_type": "randint", "_value": [1, 4]}}


def run_curve(config, rows, curve):
    """One trial as the driver runs it: after each reported step the assessor decides, and what it
    noted on the trial is kept; returns the step it was pruned at (None: it ran to the end)."""
    params, internal = engine.ask(config, rows)
    row = {"number": len(rows), "state": states.RUNNING, "value": None, "intermediate": [], "internal": internal}
    for step, v in enumerate(curve):
        row["intermediate"] = [*row["intermediate"], v]
        prune, attrs = engine.prune_decision(config, [*rows, row], row["number"])
        row["internal"] = {**row["internal"], "system_attrs": attrs}
        if prune:
            rows.append(row | {"state": states.PRUNED})
            return step
    rows.append(row | {"state": states.COMPLETE, "value": curve[-1]})
    return None


@pytest.mark.parametrize(
    "assessor",
    [{"name": "Medianstop", "args": {"start_step": 1}}, {"name": "Hyperband", "args": {"R": 9, "eta": 3}}],
)
def test_assessors_stop_a_bad_curve_and_keep_a_good_one(assessor):
    config = config_of({"x": {"_type": "uniform", "_value": [0, 1]}}, "Random", assessor=assessor)
    rows: list[dict] = []
    for n in range(12):  # good curves, a little different each
        assert run_curve(config, rows, [1.0 + 0.1 * s + 0.01 * n for s in range(9)]) is None
    pruned = [run_curve(config, rows, [0.0] * 9) for _ in range(6)]
    assert sum(p is not None for p in pruned) >= 4, pruned  # Hyperband's widest bracket may keep some
    assert run_curve(config, rows, [9.0] * 9) is None


@pytest.mark.parametrize(
    ("n", "limit", "steps"),
    [
        (5, None, None),
        (5, 5, None),
        (5, 10, None),
        (10, 1, [9]),
        (10, 2, [0, 9]),
        (10, 4, [0, 3, 6, 9]),
        (100_000, 3, [0, 50_000, 99_999]),
    ],
)
def test_a_long_curve_is_thinned_keeping_first_and_last(n, limit, steps):
    from yitong_services.hpo.records import thin

    values = [float(i) for i in range(n)]
    at, kept = thin(values, limit)
    assert at == steps
    assert kept == (values if steps is None else [float(i) for i in steps])


def test_a_public_trial_hides_internals_and_counts_its_steps():
    from yitong_services.hpo.records import public_trial

    row = {"number": 0, "state": "running", "internal": {"params": {}}, "intermediate": [1.0, 2.0, 3.0]}
    assert public_trial(row) == {"number": 0, "state": "running", "intermediate": [1.0, 2.0, 3.0], "steps": 3}
    thinned = public_trial(row, 2)
    assert thinned["intermediate"] == [1.0, 3.0] and thinned["intermediate_steps"] == [0, 2]
    assert thinned["steps"] == 3 and "internal" not in thinned


def test_importance_is_computed_again_only_when_complete_trials_change(monkeypatch):
    calls = []
    monkeypatch.setattr(engine, "importance", lambda config, rows: calls.append(len(rows)) or {"x": 1.0})
    done = {"number": 0, "state": states.COMPLETE, "value": 1.0}
    running = {"number": 1, "state": states.RUNNING, "value": None}
    assert engine.importance_cached(9001, {}, [done]) == {"x": 1.0}
    assert engine.importance_cached(9001, {}, [done, running]) == {"x": 1.0}  # nothing new complete
    assert calls == [1]
    engine.importance_cached(9001, {}, [done, {**running, "state": states.COMPLETE, "value": 2.0}])
    engine.importance_cached(9002, {}, [done])  # another experiment
    assert calls == [1, 2, 1]


@pytest.mark.parametrize(
    "tuner, assessor",
    [
        ("Random", None),
        ("TPE", None),
        ("TPE", "Hyperband"),
        ("TPE", "Medianstop"),
        ("GridSearch", None),
        ("CMAES", None),
    ],
)
def test_the_kept_study_decides_as_a_replay_does(tuner, assessor):
    """engine.ask/prune_decision with a key (the study kept between questions and updated in
    place) give exactly what a replay of the rows gives, through running -> steps -> pruned or
    complete, a failed trial, and a row that goes back (a retried trial: rebuilt)."""
    import random

    grid = {"c": {"_type": "choice", "_value": [1, 2, 3, 4, 5]}, "d": {"_type": "choice", "_value": ["a", "b"]}}
    body = {
        "name": "kept",
        "vc": "v",
        "space": grid if tuner == "GridSearch" else {"x": {"_type": "uniform", "_value": [0, 1]}, **grid},
        "tuner": {"name": tuner},
        "template": {},
    }
    if assessor:
        body["assessor"] = {"name": assessor}
    config = ExperimentSpec.model_validate(body).model_dump(mode="json")
    key = f"test-{tuner}-{assessor}"
    rng = random.Random(7)
    replayed: list[dict] = []
    kept: list[dict] = []

    def update(number: int, **fields) -> None:
        for rows in (replayed, kept):
            rows[number] = {**rows[number], **fields}

    for n in range(10 if tuner == "GridSearch" else 40):
        asked = engine.ask(config, replayed)
        assert engine.ask(config, kept, key=key) == asked, n
        for rows in (replayed, kept):
            rows.append({"number": n, "state": states.RUNNING, "value": None, "intermediate": [], "internal": asked[1]})
        running = [r["number"] for r in replayed if r["state"] == states.RUNNING]
        if len(running) < 2:
            continue
        i = running[0]
        for _step in range(3):
            update(i, intermediate=[*replayed[i]["intermediate"], rng.random()])
            decision = engine.prune_decision(config, replayed, i)
            assert engine.prune_decision(config, kept, i, key=key) == decision
            update(i, internal={**replayed[i]["internal"], "system_attrs": decision[1]})
            if decision[0]:
                update(i, state=states.PRUNED)
                break
        else:
            end = (states.FAILED, None) if n % 7 == 0 else (states.COMPLETE, rng.random())
            update(i, state=end[0], value=end[1])
        if n == 20:  # a failed trial retried: it runs again from nothing
            j = next((r["number"] for r in replayed if r["state"] == states.FAILED), None)
            if j is not None:
                update(j, state=states.RUNNING, value=None, intermediate=[])


def test_trials_forward_the_file_channel_where_files_are_not_shared():
    from yitong_services.hpo.records import forwarded, trial_spec

    config = ExperimentSpec.model_validate(
        {
            "name": "f",
            "vc": "v",
            "space": {"x": {"_type": "uniform", "_value": [0, 1]}},
            "template": {"command": "python t.py", "environment": {"kernel": "python3"}},
        }
    ).model_dump(mode="json")
    assert forwarded(config, "kube") and not forwarded(config, "local") and not forwarded(config, "slurm")
    spec = trial_spec(config, 3, 1, forward=forwarded(config, "kube"))
    assert spec.command == ["python", "-m", "yitong_lab.hpo.forward", "--", "bash", "-c", "python t.py"]
    config["template"]["env"] = {"YT_HPO_CHANNEL": "forward"}
    assert forwarded(config, "local")
    assert trial_spec(config, 3, 1).command == "python t.py"  # unwrapped unless asked


def test_a_final_result_goes_to_the_file_the_platform_reads_when_it_says_so(tmp_path, monkeypatch):
    """``YT_HPO_FINAL=file`` (the platform reads the trial's directory at its end): the final
    result is a file-channel record, no HTTP (the URL here answers nothing); intermediate results
    still go over HTTP; a value the platform would refuse is refused in the trial."""
    from yitong_lab.hpo import trial
    from yitong_services.hpo import channel

    monkeypatch.setenv("NNI_SYS_DIR", str(tmp_path))
    monkeypatch.setenv("YT_HPO_FINAL", "file")
    monkeypatch.setenv("YT_HPO_PARAMS", '{"x": 1}')
    monkeypatch.setenv("YITONG_API_URL", "http://127.0.0.1:9/api/v1")  # discard port: nobody answers
    monkeypatch.setenv("YITONG_JOB_TOKEN", "t")
    monkeypatch.setenv("YITONG_JOB_ID", "7")
    posted: list[str] = []
    monkeypatch.setattr(trial, "_http_post", lambda url, body, token: posted.append(url) or (200, b"{}"))
    sdk.report(0.25)
    sdk.report_final({"default": 0.5, "acc": 0.75})
    assert posted == ["http://127.0.0.1:9/api/v1/experiments/trials/7/report"]  # the intermediate only
    records, _ = channel.read_records(tmp_path / ".nni" / "metrics", 0)
    assert [r["type"] for r in records] == ["FINAL"]
    assert channel.metric_value(records[0]["value"], "acc") == 0.75
    for bad in (float("nan"), "high", {}, {"acc": float("inf")}, True):
        with pytest.raises(ValueError, match="finite number"):
            sdk.report_final(bad)


def test_a_final_result_takes_the_jobs_result_pipe_and_nothing_else_on_that_descriptor(tmp_path, monkeypatch):
    """On the local backend the final result is the job's result: one line on the pipe
    ``$YITONG_RESULT_FD`` (jobs/wrapper.py keeps it), no file made. A descriptor that is not a
    pipe any more (the trial closed it and opened a file there) gets nothing: the file channel
    takes the result."""
    from yitong_services.hpo import channel

    monkeypatch.setenv("NNI_SYS_DIR", str(tmp_path))
    monkeypatch.setenv("YT_HPO_FINAL", "file")
    monkeypatch.setenv("YT_HPO_PARAMS", '{"x": 1}')
    read, write = os.pipe()
    try:
        monkeypatch.setenv("YITONG_RESULT_FD", str(write))
        sdk.report_final(0.5)
        sdk.report_final({"default": 0.25, "acc": 0.75})
        assert os.read(read, 4096) == b'{"default": 0.5}\n{"default": 0.25, "acc": 0.75}\n'
        assert not (tmp_path / ".nni").exists()
    finally:
        os.close(read)
        os.close(write)
    other = tmp_path / "other.txt"
    with open(other, "wb") as f:
        monkeypatch.setenv("YITONG_RESULT_FD", str(f.fileno()))
        sdk.report_final(0.125)
    assert other.read_bytes() == b""
    records, _ = channel.read_records(tmp_path / ".nni" / "metrics", 0)
    assert [(r["type"], r["value"]) for r in records] == [("FINAL", "0.125")]
    monkeypatch.setenv("YITONG_RESULT_FD", "not a number")
    sdk.report_final(0.0625)
    assert len(channel.read_records(tmp_path / ".nni" / "metrics", 0)[0]) == 2


@pytest.mark.parametrize("tuner", ["TPE", "Random", "CMAES"])
def test_a_reseeded_sampler_draws_what_a_new_one_draws(tuner):
    """The kept study's sampler is reseeded in place per question, not made anew (a new one's
    NumPy state costs 0.1-0.3 ms): this Optuna keeps its random state where tuners.reseed looks,
    and the draws after reseeding are a new sampler's."""
    import optuna

    from yitong_services.hpo.tuners import reseed, sampler

    space = {"x": {"_type": "uniform", "_value": [0, 1]}}

    def draws(s) -> list[float]:
        study = optuna.create_study(sampler=s)
        return [study.ask().suggest_float("x", 0, 1) for _ in range(3)]

    used = sampler(tuner, {}, space, 1)
    draws(used)
    assert reseed(used, tuner, 5)
    assert draws(used) == draws(sampler(tuner, {}, space, 5))
    assert not reseed(sampler("GridSearch", {}, {"c": {"_type": "choice", "_value": [1, 2]}}, 0), "GridSearch", 0)


@pytest.mark.parametrize(
    ("stored", "job_state", "job_reason", "shown"),
    [
        (
            ("running", ""),
            "queued",
            "waiting: user cap in VC default: alice uses 2 of 2 cpu",
            ("waiting", "waiting: user cap in VC default: alice uses 2 of 2 cpu"),
        ),
        (("running", ""), "queued", "", ("waiting", "waiting: queued")),
        (("running", ""), "admitted", "", ("waiting", "waiting: starting")),
        (("running", ""), "running", "", ("running", "")),
        (("running", "pruned at step 2"), "running", "", ("running", "pruned at step 2")),
        (("failed", "job 3 failed: exit code 1"), "failed", "exit code 1", ("failed", "job 3 failed: exit code 1")),
        (("running", ""), None, None, ("running", "")),  # no job (yet)
    ],
)
def test_a_trial_shows_its_jobs_wait(stored, job_state, job_reason, shown):
    assert states.shown(*stored, job_state, job_reason) == shown


@pytest.mark.parametrize(
    ("log", "tail"),
    [
        (b"", ""),
        (b"a\nb\n\n", "a\nb"),
        (b"".join(b"line %d\n" % i for i in range(20)), "line 15\nline 16\nline 17\nline 18\nline 19"),
        (b"x" * 300 + b"\n", "x" * 199 + "\u2026"),
        (
            b"progress 10%\rprogress 99%\r\nTraceback\nValueError: \xff\n",
            "progress 10%\nprogress 99%\nTraceback\nValueError: \ufffd",
        ),
    ],
)
def test_a_failed_trials_reason_gets_its_logs_last_lines(log, tail):
    from yitong_services.hpo.driver import last_lines

    assert last_lines(log) == tail
