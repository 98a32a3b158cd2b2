"""The whole suite's report of where its time goes: at the end of every run, the ten slowest tests
and each area's total (an area is the folder under ``tests/``, two levels deep:
``services/jobs``, ``e2e``, ``extensions``). A test's time is its setup, call and teardown
together, so a module's shared fixture counts against the test that first needed it.

``YITONG_TEST_TIMINGS=<file>`` also writes every test's seconds there as JSON (one object,
node id to seconds), the input for choosing what ``make test-quick`` runs.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent
_seconds: dict[str, float] = defaultdict(float)


def area(nodeid: str) -> str:
    """``tests/services/jobs/test_spec.py::test_x`` → ``services/jobs``; a file at the top: ``tests``."""
    parts = nodeid.split("::", 1)[0].split("/")
    if parts and parts[0] == "tests":
        parts = parts[1:]
    folders = parts[:-1][:2]
    return "/".join(folders) or "tests"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds[report.nodeid] += report.duration


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:5.1f} min" if seconds >= 60 else f"{seconds:5.1f} s  "


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    if not _seconds:
        return
    write = terminalreporter.write_line
    terminalreporter.section("where the time went")
    write("the ten slowest tests (setup + call + teardown):")
    for nodeid, seconds in sorted(_seconds.items(), key=lambda kv: -kv[1])[:10]:
        write(f"  {_minutes(seconds)}  {nodeid}")
    totals: dict[str, list[float]] = defaultdict(list)
    for nodeid, seconds in _seconds.items():
        totals[area(nodeid)].append(seconds)
    write("each area's total:")
    for name, times in sorted(totals.items(), key=lambda kv: -sum(kv[1])):
        write(f"  {_minutes(sum(times))}  {name} ({len(times)} tests)")
    write(f"  {_minutes(sum(_seconds.values()))}  all ({len(_seconds)} tests)")
    target = os.environ.get("YITONG_TEST_TIMINGS")
    if target:
        path = Path(target)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(dict(sorted(_seconds.items())), indent=0))
        tmp.replace(path)
