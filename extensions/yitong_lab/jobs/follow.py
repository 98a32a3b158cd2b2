"""Watching a job until it ends: its state changes, and (optionally) one rank's log as it is written.

The display of the states is chosen like the datasets' progress (``Output.progress``):
``"widget"`` (a notebook: one ipywidgets bar and label, updated in place) or anything else
(a line on stderr per change, so stdout carries only the log). ipywidgets is imported only
when a widget is shown.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

from yitong_lab.jobs.sdk import TERMINAL

STEPS = {"queued": 0, "admitted": 1, "running": 2}
STYLES = {"succeeded": "success", "failed": "danger", "cancelled": "warning", "preempted": "warning"}


def state_line(job: dict[str, Any]) -> str:
    """``job 12 (train): queued (#1; waiting: VC nlp: 4 of 4 cpu in use)``,
    ``job 12 (train): failed (exit code 3; ...)``."""
    extra = []
    if job["state"] == "queued" and job.get("position"):
        extra.append(f"#{job['position']}")
    if job["state"] in TERMINAL and job.get("exit_code") is not None:
        extra.append(f"exit code {job['exit_code']}")
    reason = job.get("reason")
    if reason and reason != job["state"] and reason not in extra:
        extra.append(str(reason))
    head = f"job {job['id']} ({job.get('name') or '-'}): {job['state']}"
    return head + (f" ({'; '.join(extra)})" if extra else "")


class StateDisplay:
    """One line on ``stream`` (stderr) each time the state, reason or position changes."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self.last: tuple | None = None

    def update(self, job: dict[str, Any]) -> None:
        key = (job["state"], job.get("reason"), job.get("position"), job.get("attempts"))
        if key != self.last:
            self.last = key
            self.show(job)

    def show(self, job: dict[str, Any]) -> None:
        print(state_line(job), file=self.stream or sys.stderr, flush=True)

    def note(self, text: str) -> None:
        print(text, file=self.stream or sys.stderr, flush=True)


class WidgetDisplay(StateDisplay):
    """An ``IntProgress`` (queued -> admitted -> running -> ended, coloured by the end state)
    and a label, displayed once and updated in place."""

    def __init__(self) -> None:
        super().__init__()
        self._box: Any = None

    def show(self, job: dict[str, Any]) -> None:
        if self._box is None:
            import ipywidgets
            from IPython.display import display

            self._bar = ipywidgets.IntProgress(min=0, max=3, value=0, description=f"job {job['id']}")
            self._label = ipywidgets.Label("")
            self._box = ipywidgets.HBox([self._bar, self._label])
            self._box.add_class("yt-job-state")
            display(self._box)
        state = job["state"]
        self._bar.value = STEPS.get(state, 3)
        self._bar.bar_style = STYLES.get(state, "info")
        self._label.value = state_line(job).split(": ", 1)[1]


def make(kind: Any = "auto") -> StateDisplay:
    if isinstance(kind, StateDisplay):
        return kind
    return WidgetDisplay() if kind == "widget" else StateDisplay()


class Changes:
    """Waiting for the next change of one job: pushed by the service (``GET /jobs/events``),
    or, from a service without events or when the stream breaks, ``poll`` seconds of sleep.
    The stream is opened before the first look at the job, so no change falls in between."""

    def __init__(self, client: Any, job_id: int, poll: float) -> None:
        self.client, self.job_id, self.poll = client, job_id, poll
        self.events: Iterator[dict[str, Any]] | None = None
        self._open()

    def _open(self) -> None:
        events = getattr(self.client, "job_events", None)
        if events is None:
            return
        try:
            self.events = events(self.job_id)
            next(self.events)  # "ready": the service is watching
        except Exception:  # an older service (404), or no connection: poll instead
            self.events = None

    def close(self) -> None:
        close = getattr(self.events, "close", None)
        if close is not None:
            close()

    def wait(self) -> None:
        if self.events is None:
            time.sleep(self.poll)
            return
        try:
            next(self.events)
        except StopIteration:  # the stream's time is up: watch again
            self._open()
        except Exception:
            self.events = None
            time.sleep(self.poll)


def follow(
    client: Any,
    job_id: int,
    *,
    rank: int = 0,
    logs: bool = True,
    display: Any = "auto",
    out: TextIO | None = None,
    poll: float = 1.0,
) -> dict[str, Any]:
    """Show state changes (and rank ``rank``'s log on ``out``) until the job ends; returns the
    last job model. Ctrl-C (a kernel interrupt) stops watching, not the job."""
    shown = make(display)
    job: dict[str, Any] = {}
    changed = Changes(client, job_id, poll)
    try:
        while True:
            job = client.job(job_id)
            shown.update(job)
            if job["state"] in TERMINAL and not logs:
                return job
            if logs and (job.get("backend_ref") or job["state"] in TERMINAL):
                stream = out or sys.stdout
                for chunk in client.follow_log(job_id, rank=rank):
                    stream.write(chunk)
                    stream.flush()
                job = client.job(job_id)
                shown.update(job)
                if job["state"] in TERMINAL:
                    return job
            changed.wait()
    except KeyboardInterrupt:
        shown.note(f"stopped watching job {job_id}; it goes on (yt job cancel {job_id} stops it)")
        return job
    finally:
        changed.close()
