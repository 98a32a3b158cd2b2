"""Formatting what the API returns (pure functions); parsing amounts is the service's."""

import pytest

from yitong_lab.units import format_amount, format_resources

GiB = 2**30


@pytest.mark.parametrize(
    "resource, value, text",
    [
        ("memory", 2 * GiB, "2 GiB"),
        ("memory", 1536 * 2**20, "1.5 GiB"),
        ("memory", 512 * 2**20, "512 MiB"),
        ("memory", 100, "100 B"),
        ("memory", 0, "0 B"),
        ("cpu", 1.5, "1.5"),
        ("cpu", 8.0, "8"),
        ("cpu", 0.25, "0.25"),
        ("nvidia.com/gpu", 2, "2"),
        ("cpu", None, "-"),
    ],
)
def test_format_amount(resource, value, text):
    assert format_amount(resource, value) == text


def test_format_resources():
    assert format_resources({"cpu": 8.0, "memory": 16 * GiB}) == "cpu=8, memory=16 GiB"
    assert format_resources({}) == "-"


NOW = "2026-11-28T05:00:00Z"


@pytest.mark.parametrize(
    "text, shown",
    [
        ("2026-11-28T04:55:02.849982Z", "2026-11-28 04:55 (4 min ago)"),
        ("2026-11-28T04:59:40", "2026-11-28 04:59 (just now)"),  # no zone: UTC
        ("2026-11-28T02:00:00+00:00", "2026-11-28 02:00 (3 h ago)"),
        ("2026-11-26T05:00:00Z", "2026-11-26 05:00 (2 days ago)"),
        ("2026-11-28T05:10:00Z", "2026-11-28 05:10 (in 10 min)"),
        ("2026-01-02T03:04:05Z", "2026-01-02 03:04"),  # over a week: the date says it
        (None, "-"),
        ("", "-"),
        ("soon", "soon"),
    ],
)
def test_times_are_local_to_the_minute_with_how_long_ago(monkeypatch, text, shown):
    import time

    from yitong_lab.units import format_time, parse_time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    assert format_time(text, now=parse_time(NOW)) == shown


def test_times_are_in_the_local_zone(monkeypatch):
    import time

    from yitong_lab.units import format_time, parse_time

    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        assert format_time("2026-11-28T04:55:02Z", now=parse_time(NOW)) == "2026-11-28 12:55 (4 min ago)"
    finally:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()


@pytest.mark.parametrize(
    "value, text",
    [
        (0.8765432101234567, "0.8765"),
        (0.1, "0.1"),
        (12345.678, "1.235e+04"),
        (1e-07, "1e-07"),
        (3, "3"),
        (True, "True"),
        (None, "-"),
        ("relu", "relu"),
    ],
)
def test_measured_numbers_to_four_significant_digits(value, text):
    from yitong_lab.units import format_number

    assert format_number(value) == text


def test_raw_bytes_and_times_do_not_reach_the_tables(monkeypatch):
    """The builders of `yt job show`, `yt vc show` and `yt hpo show` word bytes, times and floats
    for people (their --json prints the API's values unchanged)."""
    import time

    from yitong_lab.cli import hpo, job_tables, output
    from yitong_lab.units import format_bytes

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    assert format_bytes(2147483648) == "2 GiB"
    assert job_tables.shape({"cpu": 0.5, "memory": 2147483648}) == "1 node x (0.5 cpu, 2 GiB), plain"
    assert job_tables.shape({"memory": "4Gi"}) == "1 node x (1 cpu, 4Gi), plain"  # as the spec wrote it
    job = {"id": 3, "name": "t", "state": "running", "created": "2026-01-02T03:04:05.849982Z", "started": None}
    details = job_tables.job_details(job)
    assert "created:    2026-01-02 03:04\n" in details and "started:    -\n" in details
    storage = {"quota": None, "used": 0, "store": 3 * 2**30, "job_outputs": 0, "measured": "2026-01-02T03:04:05Z"}
    (pair,) = output._storage_parts(storage)
    assert pair == ("storage", "store 3 GiB, job folders 0 B (measured 2026-01-02 03:04)")
    exp = {"id": 1, "name": "e", "vc": "v", "state": "done", "reason": "", "counts": {"complete": 1}}
    exp["best"] = {"number": 0, "value": 0.8765432101234567, "params": {}}
    exp["trials"] = [{"number": 0, "job_id": 5, "state": "complete", "value": 0.8765432101234567, "params": {}}]
    assert summary_line(hpo.summary(exp)) == "best 0.8765 (trial 0: {})"
    assert hpo.trials_table(exp).splitlines()[1].split()[:4] == ["0", "5", "complete", "0.8765"]


def summary_line(text: str) -> str:
    return text.split("; ")[-1]
