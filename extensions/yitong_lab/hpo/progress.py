"""How ``yt hpo create|show --follow`` shows a running experiment: a tqdm bar of finished trials
out of the budget with the best value (a terminal), or in a notebook (``%yt hpo ...``) one
ipywidgets box updated in place: a progress bar, a line with the state and the best value, and a
small table of trials (running ones, then the best). tqdm and ipywidgets are imported only when
shown; the table's builders are pure."""

from __future__ import annotations

import json
from html import escape
from typing import Any

TABLE_ROWS = 8
ACTIVE = ("running", "waiting")  # a waiting trial's job is queued: not finished either


def finished(exp: dict[str, Any]) -> int:
    return sum(n for s, n in (exp.get("counts") or {}).items() if s not in ACTIVE)


def status_line(exp: dict[str, Any]) -> str:
    """``running: 3 of 10 trials finished (2 running, 1 waiting); best 0.93 (trial 2)``."""
    counts = exp.get("counts") or {}
    line = f"{exp['state']}: {finished(exp)} of {exp['config']['max_trials']} trials finished"
    active = ", ".join(f"{counts[s]} {s}" for s in ACTIVE if counts.get(s))
    if active:
        line += f" ({active})"
    if counts.get("pruned"):
        line += f", {counts['pruned']} pruned"
    best = exp.get("best")
    if best:
        line += f"; best {best['value']:.6g} (trial {best['number']})"
    return line + (f" — {exp['reason']}" if exp.get("reason") else "")


def table_rows(exp: dict[str, Any], limit: int = TABLE_ROWS) -> list[tuple[str, str, str, str]]:
    """``(number, state, value, params)`` of at most ``limit`` trials: the running ones (newest
    first), then the complete ones best first, then the rest newest first."""
    trials = list(exp.get("trials") or [])
    sign = -1.0 if exp["config"]["objective"]["direction"] == "maximize" else 1.0

    def order(t: dict[str, Any]) -> tuple:
        if t["state"] in ACTIVE:
            return (0, -t["number"])
        if t["state"] == "complete" and t.get("value") is not None:
            return (1, sign * t["value"], t["number"])
        return (2, -t["number"])

    rows = []
    for t in sorted(trials, key=order)[:limit]:
        value = "" if t.get("value") is None else f"{t['value']:.6g}"
        rows.append((str(t["number"]), t["state"], value, json.dumps(t.get("params") or {}, sort_keys=True)))
    return rows


def table_html(exp: dict[str, Any], limit: int = TABLE_ROWS) -> str:
    """The small table as HTML, every value escaped."""
    metric = exp["config"]["objective"].get("metric", "default")
    head = "".join(f"<th>{escape(h)}</th>" for h in ("#", "state", metric, "params"))
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in table_rows(exp, limit)
    )
    return f'<table class="yt-hpo-trials"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


class BarDisplay:
    """tqdm's bar (on stderr) of finished trials; ``disable`` for ``--json``."""

    def __init__(self, disable: bool = False) -> None:
        self.disable = disable
        self._bar: Any = None

    def update(self, exp: dict[str, Any]) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=exp["config"]["max_trials"], unit="trial", disable=self.disable, leave=True)
        self._bar.total = exp["config"]["max_trials"]
        self._bar.update(finished(exp) - self._bar.n)
        if exp.get("best"):
            self._bar.set_postfix(best=f"{exp['best']['value']:.4g}", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class WidgetDisplay:
    """An ``IntProgress`` of finished trials, a ``Label`` (state, best value) and an ``HTML``
    table of trials, in one box displayed once and updated in place."""

    STYLES = {"done": "success", "stopped": "warning"}

    def __init__(self) -> None:
        self._box: Any = None

    def update(self, exp: dict[str, Any]) -> None:
        if self._box is None:
            import ipywidgets
            from IPython.display import display

            self._bar = ipywidgets.IntProgress(min=0, value=0, description=f"experiment {exp['id']}")
            self._label = ipywidgets.Label("")
            self._table = ipywidgets.HTML("")
            self._box = ipywidgets.VBox([ipywidgets.HBox([self._bar, self._label]), self._table])
            self._box.add_class("yt-hpo-progress")
            display(self._box)
        self._bar.max = max(1, exp["config"]["max_trials"])
        self._bar.value = min(finished(exp), self._bar.max)
        self._bar.bar_style = self.STYLES.get(exp["state"], "info")
        self._label.value = status_line(exp)
        self._table.value = table_html(exp)

    def close(self) -> None:
        pass


def make(kind: Any = "auto", disable: bool = False) -> BarDisplay | WidgetDisplay:
    """The widget in a notebook (``kind == "widget"``, not ``--json``), else tqdm's bar."""
    return WidgetDisplay() if kind == "widget" and not disable else BarDisplay(disable=disable)
