"""``yt hpo`` pure builders: NNI config inlining, the cell's experiment, the summary lines.
(The verbs against a real service: tests/services/hpo/test_hpo_process.py.)"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from yitong_lab.cli.grammar import UsageError, build_parser
from yitong_lab.cli.hpo import cell_document, summary, trials_table
from yitong_lab.hpo.sdk import nni_config_text


def test_nni_config_inlines_the_space_file_and_resolves_the_code_dir(tmp_path):
    (tmp_path / "search_space.json").write_text(json.dumps({"lr": {"_type": "uniform", "_value": [0, 1]}}))
    (tmp_path / "config.yml").write_text(
        "searchSpaceFile: search_space.json\ntrialCommand: python3 t.py\ntrialCodeDirectory: .\n"
    )
    doc = json.loads(nni_config_text(tmp_path / "config.yml"))
    assert doc["searchSpace"] == {"lr": {"_type": "uniform", "_value": [0, 1]}} and "searchSpaceFile" not in doc
    assert doc["trialCodeDirectory"] == str(tmp_path.resolve())
    (tmp_path / "bad.yml").write_text("searchSpaceFile: nope.json\ntrialCommand: x\n")
    with pytest.raises(FileNotFoundError, match="nope.json"):
        nni_config_text(tmp_path / "bad.yml")


def test_nni_config_lists_what_the_trial_code_imports(tmp_path):
    """NNI's auto-gbdt example shape: main.py imports nni, lightgbm, pandas, sklearn and a module
    of its own; the standard library and the directory's own modules are left out."""
    (tmp_path / "main.py").write_text(
        "import logging, os\nimport lightgbm as lgb\nimport pandas as pd\nfrom sklearn.metrics import mean_squared_error\n"
        "import nni\nfrom helpers import load\nfrom . import sibling\nfrom __future__ import annotations\n"
    )
    (tmp_path / "helpers.py").write_text("import numpy\n")
    (tmp_path / "broken.py").write_text("def (:\n")
    (tmp_path / "config.yml").write_text(
        "searchSpace: {a: {_type: choice, _value: [1]}}\ntrialCommand: python3 main.py\ntrialCodeDirectory: .\n"
        "yitong: {template: {cpu: 2}}\n"
    )
    doc = json.loads(nni_config_text(tmp_path / "config.yml"))
    assert doc["yitong"] == {"template": {"cpu": 2}, "trial_imports": ["lightgbm", "nni", "numpy", "pandas", "sklearn"]}


def test_cell_becomes_an_experiment(tmp_path):
    args = build_parser().parse_args(
        [
            "hpo",
            "create",
            "--vc",
            "vision",
            "--space",
            '{"x": {"_type": "uniform", "_value": [0, 1]}}',
            "--trials",
            "4",
            "--minimize",
        ]
    )
    doc = cell_document(args, "print(1)\n", tmp_path)
    assert doc["vc"] == "vision" and doc["max_trials"] == 4 and doc["objective"]["direction"] == "minimize"
    script = doc["template"]["command"][1]
    assert open(script).read() == "print(1)\n" and script.startswith(str(tmp_path))
    with pytest.raises(UsageError, match="--space"):
        cell_document(SimpleNamespace(vc="vision", space=None), "x", tmp_path)


def test_summary_and_table():
    exp = {
        "id": 3,
        "name": "e",
        "vc": "vision",
        "state": "done",
        "reason": "",
        "counts": {"complete": 2},
        "best": {"number": 1, "value": 0.5, "params": {"x": 1}},
        "trials": [
            {"number": 0, "job_id": 7, "state": "complete", "value": 0.25, "params": {"x": 0}},
            {"number": 1, "job_id": 8, "state": "complete", "value": 0.5, "params": {"x": 1}},
        ],
    }
    assert summary(exp) == 'experiment 3 e (vision): done; 2 complete; best 0.5 (trial 1: {"x": 1})'
    assert trials_table(exp).splitlines()[2].split()[:4] == ["1", "8", "complete", "0.5"]


def _exp(state, trials, max_trials=4, direction="maximize"):
    counts: dict[str, int] = {}
    for t in trials:
        counts[t["state"]] = counts.get(t["state"], 0) + 1
    done = [t for t in trials if t["state"] == "complete"]
    sign = 1 if direction == "maximize" else -1
    best = max(done, key=lambda t: sign * t["value"]) if done else None
    return {
        "id": 7,
        "name": "e",
        "vc": "vision",
        "state": state,
        "reason": "",
        "config": {"max_trials": max_trials, "objective": {"metric": "acc", "direction": direction}},
        "counts": counts,
        "best": best and {"number": best["number"], "value": best["value"], "params": best["params"]},
        "trials": trials,
    }


def _t(number, state, value=None, **params):
    return {"number": number, "job_id": 7 + number, "state": state, "value": value, "params": params or {"x": number}}


TRIALS = [
    _t(0, "complete", 0.5),
    _t(1, "complete", 0.9),
    _t(2, "pruned"),
    _t(3, "running"),
    _t(4, "complete", 0.7, tag="<b>"),
]


@pytest.mark.parametrize(
    ("direction", "order"),
    [("maximize", ["3", "1", "4", "0", "2"]), ("minimize", ["3", "0", "4", "1", "2"])],
)
def test_the_small_table_shows_running_then_best(direction, order):
    from yitong_lab.hpo.progress import table_rows

    rows = table_rows(_exp("running", TRIALS, direction=direction))
    assert [r[0] for r in rows] == order
    assert table_rows(_exp("running", TRIALS), limit=2) == [
        ("3", "running", "", '{"x": 3}'),
        ("1", "complete", "0.9", '{"x": 1}'),
    ]


def test_the_status_line_and_escaped_table():
    from yitong_lab.hpo.progress import status_line, table_html

    exp = _exp("running", TRIALS, max_trials=10)
    assert status_line(exp) == "running: 4 of 10 trials finished (1 running), 1 pruned; best 0.9 (trial 1)"
    html = table_html(exp)
    assert "<th>acc</th>" in html and "&lt;b&gt;" in html and "<b>" not in html


def test_follow_in_a_notebook_updates_one_widget(monkeypatch):
    """``%yt hpo show 7 -f``: one box displayed (IPython's display, the frontend boundary, is
    recorded), updated in place until the experiment is done. The client is a stand-in that
    answers the experiment as it runs (the verbs against the real service: test_hpo_process.py)."""
    import IPython.display

    from yitong_lab.cli import hpo as cli
    from yitong_lab.cli.output import Output

    answers = iter(
        [
            _exp("running", TRIALS[:1] + [_t(1, "running")]),
            _exp("running", TRIALS[:3] + [_t(3, "running")]),
            _exp("done", [*TRIALS[:3], _t(3, "complete", 0.2)]),
        ]
    )
    client = SimpleNamespace(experiment=lambda i, trials=True: next(answers))
    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    out = Output(json=False, progress="widget")
    args = build_parser().parse_args(["hpo", "show", "7", "-f"])
    exp = cli.follow(client, args.id, out, interval=0)
    assert exp["state"] == "done"
    (box,) = shown
    (bar, label), table = box.children[0].children, box.children[1]
    assert (bar.value, bar.max, bar.bar_style, bar.description) == (4, 4, "success", "experiment 7")
    assert label.value == "done: 4 of 4 trials finished, 1 pruned; best 0.9 (trial 1)"
    assert table.value.count("<tr>") == 5  # the header and four trials


def test_follow_on_a_terminal_is_a_tqdm_bar(capsys):
    from yitong_lab.cli import hpo as cli
    from yitong_lab.cli.output import Output

    answers = iter([_exp("running", TRIALS[:2]), _exp("stopped", TRIALS), _exp("stopped", TRIALS)])
    asked = []
    client = SimpleNamespace(experiment=lambda i, trials=True: asked.append(trials) or next(answers))
    exp = cli.follow(client, 7, Output(json=False, progress="auto"), interval=0)
    assert exp["state"] == "stopped"
    assert asked == [False, False, True]  # the bar polls the counts; the answer is the whole experiment
    err = capsys.readouterr().err
    assert "4/4" in err and "best=0.9" in err, err


def test_waiting_trials_are_not_finished_and_say_why():
    from yitong_lab.hpo.progress import finished, status_line

    trials = [_t(0, "complete", 0.5), _t(1, "running"), {**_t(2, "waiting"), "reason": "waiting: user cap"}]
    exp = _exp("running", trials, max_trials=4)
    assert finished(exp) == 1
    assert status_line(exp) == "running: 1 of 4 trials finished (1 running, 1 waiting); best 0.5 (trial 0)"
    lines = trials_table(exp).splitlines()
    assert lines[3].split()[:3] == ["2", "9", "waiting"] and lines[4].strip() == "waiting: user cap"


FAILED = {**_t(1, "failed"), "reason": "job 9 failed: exit code 1; last lines of its log:\nTraceback\nValueError: nan"}


@pytest.mark.parametrize(
    ("state", "reason", "trials", "code"),
    [
        ("done", "", [_t(0, "failed"), FAILED], 1),  # every trial failed
        ("done", "", [_t(0, "complete", 0.5), FAILED], 0),
        ("stopped", "a trial could not be submitted: VC vision has no cpu in its quota", [], 1),
        ("stopped", "stopped", [FAILED], 1),  # stopped by its owner after every trial failed
        ("stopped", "stopped", [], 0),
        ("done", "the duration is spent", [_t(0, "cancelled")], 0),
    ],
)
def test_follow_exits_1_when_the_experiment_failed(capsys, state, reason, trials, code):
    """``yt hpo create|show --follow``: a stand-in client answers the ended experiment; the
    exit code is 1 when it failed, and stderr shows the last failed trial's reason (its log)."""
    exp = {**_exp(state, trials), "reason": reason}
    client = SimpleNamespace(experiment=lambda i, trials=True: exp)
    from yitong_lab.cli.grammar import run

    assert run(["hpo", "show", "7", "--follow"], client=client) == code
    err = capsys.readouterr().err
    assert ("failed" in err) == bool(code), err
    if code and trials:
        assert "trial 1: job 9 failed: exit code 1; last lines of its log:\nTraceback\nValueError: nan" in err


def test_create_prints_the_services_warnings(capsys, tmp_path):
    from yitong_lab.cli.grammar import run

    made = {**_exp("running", []), "warnings": ["at most 1 trial can run at once: your per-user cap is 2 cpu"]}
    client = SimpleNamespace(create_experiment=lambda doc: made)
    (tmp_path / "e.yaml").write_text("name: e\nvc: vision\n")
    assert run(["hpo", "create", str(tmp_path / "e.yaml")], client=client) == 0
    assert "warning: at most 1 trial can run at once: your per-user cap is 2 cpu" in capsys.readouterr().out
