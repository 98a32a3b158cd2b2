"""The Experiments view's pure builders (extensions/src/hpoCharts.ts) run by node on the compiled
module (extensions/lib, built by `make install`): NNI parameters flattened for columns, the
trials table's sort and durations, and the four SVG charts (best so far, intermediate curves with
pruned trials marked, parallel coordinates, importance) as trees and as escaped SVG text. No
browser: the browser side is tests/e2e/test_experiments_browser.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import require

LIB = Path(__file__).resolve().parents[2] / "extensions" / "lib" / "hpoCharts.js"


def run(expression: str, **values):
    """`expression` evaluated by node with hpoCharts' exports in scope as `c` and each keyword as
    a JSON constant; its JSON value."""
    require("node", shutil.which("node") is not None, "apt-get install nodejs")
    require("the compiled extension", LIB.exists(), "make install")
    consts = "".join(f"const {k} = {json.dumps(v)};\n" for k, v in values.items())
    script = (
        f"import * as c from {json.dumps(LIB.as_uri())};\n{consts}process.stdout.write(JSON.stringify({expression}));\n"
    )
    out = subprocess.run(
        ["node", "--no-warnings", "--experimental-detect-module", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout)


def trial(number, state="complete", value=None, params=None, intermediate=(), **extra):
    return {
        "number": number,
        "state": state,
        "value": value,
        "params": params if params is not None else {"x": number / 10},
        "intermediate": list(intermediate),
        "created": "2026-01-01T00:00:00",
        "finished": None if state == "running" else f"2026-01-01T00:00:{10 + number:02d}",
        **extra,
    }


TRIALS = [
    trial(0, value=0.5, intermediate=[0.1, 0.3, 0.5]),
    trial(1, value=0.9, intermediate=[0.2, 0.6, 0.9]),
    trial(2, "pruned", intermediate=[0.05, 0.06]),
    trial(3, "running", intermediate=[0.3]),
    trial(4, value=0.7, intermediate=[0.2, 0.5, 0.7]),
]


def nodes(tree, cls):
    """Every node of an SvgNode tree whose class list holds `cls`."""
    found = [tree] if cls in str(tree["attrs"].get("class", "")).split() else []
    for child in tree.get("children", []):
        found += nodes(child, cls)
    return found


@pytest.mark.parametrize(
    ("params", "flat"),
    [
        ({"x": 0.5, "act": "relu"}, {"x": 0.5, "act": "relu"}),
        (
            {"optimizer": {"_name": "sgd", "lr": 0.01, "momentum": 0.9}, "batch": 32},
            {"optimizer": "sgd", "optimizer/lr": 0.01, "optimizer/momentum": 0.9, "batch": 32},
        ),
        ({"layers": [64, 32], "none": None}, {"layers": "[64,32]", "none": "null"}),
    ],
)
def test_nni_parameters_flatten_to_columns(params, flat):
    assert run("c.flatParams(p)", p=params) == flat


def test_parameter_names_in_first_seen_order():
    trials = [trial(0, params={"b": 1}), trial(1, params={"a": {"_name": "x", "k": 2}, "b": 2})]
    assert run("c.paramNames(t)", t=trials) == ["b", "a", "a/k"]


@pytest.mark.parametrize(
    ("key", "ascending", "order"),
    [
        ("number", False, [4, 3, 2, 1, 0]),
        ("value", False, [1, 4, 0, 2, 3]),  # no value: last either way, in number order
        ("value", True, [0, 4, 1, 2, 3]),
        ("state", True, [0, 1, 4, 2, 3]),
        ("param:x", False, [4, 3, 2, 1, 0]),
        ("duration", True, [0, 1, 2, 4, 3]),  # the running one has run longest
    ],
)
def test_trials_sort_by_any_column(key, ascending, order):
    now = "Date.parse('2026-01-01T01:00:00Z')"
    got = run(f"c.sortTrials(t, {json.dumps(key)}, {json.dumps(ascending)}, {now}).map(x => x.number)", t=TRIALS)
    assert got == order


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, "-"), (0.4, "0s"), (42, "42s"), (185, "3m 05s"), (7260, "2h 01m")]
)
def test_duration_text(seconds, text):
    assert run("c.durationText(s)", s=seconds) == text


def test_durations_run_to_now_while_running():
    now = "Date.parse('2026-01-01T00:01:00Z')"
    assert run(f"t.map(x => c.durationSeconds(x, {now}))", t=TRIALS) == [10, 11, 12, 60, 14]


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (0, "0"), (0.123456, "0.1235"), (12345.6, "12350"), (123456, "1.23e+5"), (0.0001, "1e-4")],
)
def test_numbers_are_short(value, text):
    assert run("c.fmt(v)", v=value) == text


def test_ticks_are_round_and_cover_the_range():
    assert run("c.ticks(0, 1, 5)") == [0, 0.2, 0.4, 0.6, 0.8, 1]
    assert run("c.ticks(-3, 17, 4)") == [0, 5, 10, 15]
    assert run("c.ticks(0.0625, 0.8875, 4)") == [0.2, 0.4, 0.6, 0.8]
    assert run("c.extent([2, 2])") == [1.8, 2.2] and run("c.extent([])") == [0, 1]
    assert run("c.padded([0, 10])") == [-0.5, 10.5]


def test_best_so_far_has_a_dot_per_complete_trial_and_a_step_line():
    tree = run("c.bestSoFarChart(t, b, 'acc', 'maximize')", t=TRIALS, b=[0.5, 0.9, 0.9, 0.9, 0.9])
    assert tree["attrs"]["class"] == "yt-chart yt-chart-best"
    assert [d["attrs"]["data-trial"] for d in nodes(tree, "yt-dot")] == [0, 1, 4]
    (line,) = nodes(tree, "yt-best-line")
    # starts at trial 0's value, steps up at trial 1 and stays flat (H = horizontal, V = vertical)
    assert re.fullmatch(r"M[\d.]+,[\d.]+H[\d.]+V[\d.]+(H[\d.]+V[\d.]+)*H[\d.]+", line["attrs"]["d"]), line
    dots = {d["attrs"]["data-trial"]: d["attrs"]["cy"] for d in nodes(tree, "yt-dot")}
    assert dots[1] < dots[4] < dots[0]  # higher value, higher on the page
    empty = run("c.bestSoFarChart([t[3]], [null], 'acc', 'maximize')", t=TRIALS)
    assert "No complete trial yet." in run("c.svgText(e)", e=empty)


def test_curves_mark_pruned_trials():
    tree = run("c.curvesChart(t, 'acc')", t=TRIALS)
    curves = nodes(tree, "yt-curve")
    assert [(g["attrs"]["data-trial"], g["attrs"]["data-state"]) for g in curves] == [
        (0, "complete"),
        (1, "complete"),
        (2, "pruned"),
        (3, "running"),
        (4, "complete"),
    ]
    marks = nodes(tree, "yt-pruned-mark")
    assert len(marks) == 1 and marks[0] in curves[2]["children"]
    assert curves[3]["children"][1]["tag"] == "circle"  # one step: a dot, not a line
    assert len(curves[0]["children"][1]["attrs"]["points"].split()) == 3


def test_a_thinned_curve_is_drawn_at_its_kept_steps():
    thinned = [trial(0, value=1, intermediate=[0.0, 1.0], intermediate_steps=[0, 999], steps=1000)]
    tree = run("c.curvesChart(t, 'acc', {width: 520, height: 240})", t=thinned)
    (line,) = nodes(tree, "yt-curve-line")
    (x0, _), (x1, _) = (p.split(",") for p in line["attrs"]["points"].split())
    assert float(x0) == 56 and float(x1) == 520 - 16  # step 0 at the left axis, step 999 at the right end
    labels = [n.get("text") for n in nodes(tree, "yt-tick-label")]
    assert "999" not in labels and "800" in labels


def test_at_most_max_trials_curves_the_latest():
    many = [trial(i, value=i, intermediate=[i]) for i in range(30)]
    tree = run("c.curvesChart(t, 'acc', undefined, 10)", t=many)
    assert [g["attrs"]["data-trial"] for g in nodes(tree, "yt-curve")] == list(range(20, 30))


def test_parallel_coordinates_axes_and_lines():
    trials = [
        trial(0, value=0.1, params={"lr": 0.01, "opt": {"_name": "sgd", "m": 0.9}}),
        trial(1, value=0.9, params={"lr": 0.1, "opt": {"_name": "adam"}}),
        trial(2, "running", params={"lr": 0.5, "opt": {"_name": "adam"}}),
    ]
    names = run("c.paramNames(t)", t=trials)
    assert names == ["lr", "opt", "opt/m"]
    tree = run("c.parallelChart(t, n, 'acc', 'maximize')", t=trials, n=names)
    assert [a.get("text") for a in nodes(tree, "yt-parallel-name")] == ["lr", "opt", "opt/m", "acc"]
    lines = nodes(tree, "yt-parallel-line")
    assert [ln["attrs"]["data-trial"] for ln in lines] == [0, 1]  # complete trials only
    assert len(lines[0]["attrs"]["points"].split()) == 4
    assert len(lines[1]["attrs"]["points"].split()) == 3  # adam has no momentum: that axis skipped
    # the best trial (maximize) gets the warm end of the ramp, the worst the cold end
    assert lines[1]["attrs"]["stroke"] == run("c.ramp(1)") and lines[0]["attrs"]["stroke"] == run("c.ramp(0)")
    flipped = run("c.parallelChart(t, n, 'loss', 'minimize')", t=trials, n=names)
    assert nodes(flipped, "yt-parallel-line")[0]["attrs"]["stroke"] == run("c.ramp(1)")


def test_importance_bars_largest_first():
    tree = run("c.importanceChart({a: 0.2, b: 0.7, c: 0.1})")
    assert [g["attrs"]["data-param"] for g in nodes(tree, "yt-importance-row")] == ["b", "a", "c"]
    widths = [r["attrs"]["width"] for r in nodes(tree, "yt-importance-bar")]
    assert widths == sorted(widths, reverse=True)
    assert "two complete trials" in run("c.svgText(c.importanceChart({}))")


def test_user_values_are_escaped_in_svg_text():
    evil = "<script>alert(1)</script>&\"'"
    trials = [trial(0, value=1, params={evil: evil}), trial(1, value=2, params={evil: "x"})]
    text = run("c.svgText(c.parallelChart(t, c.paramNames(t), m, 'maximize'))", t=trials, m=evil)
    assert "<script>" not in text and "&lt;script&gt;" in text and "&amp;" in text
    text = run("c.svgText(c.importanceChart(o))", o={evil: 1})
    assert "<script>" not in text and "&#39;" in text


def test_a_trials_duration_counts_from_its_jobs_start_not_its_wait():
    now = "Date.parse('2026-01-01T00:01:00Z')"
    trials = [
        trial(0, "waiting", started=None),  # its job is queued: no duration yet
        trial(1, "running", started="2026-01-01T00:00:45Z"),  # waited 45 s, ran 15 s
        trial(2, value=0.5, started="2026-01-01T00:00:02Z"),  # finished at 00:00:12
        trial(3, "cancelled", started=None),  # cancelled while it waited
    ]
    assert run(f"t.map(x => c.durationSeconds(x, {now}))", t=trials) == [None, 15, 10, None]
