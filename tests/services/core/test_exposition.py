"""The scrape's text (core/exposition.py, core/metrics.py): byte for byte what prometheus_client's
``generate_latest`` writes, for a table of families and for the VC gauges over a real SQLite
database as VCs and allocations come, change and go; a VC's lines are re-rendered only when it changed."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    StateSetMetricFamily,
    SummaryMetricFamily,
)

from yitong_services.core import exposition
from yitong_services.core.db import Database
from yitong_services.core.metrics import Metrics, StateCollector
from yitong_services.vcs.models import VC, Allocation


class Families:
    def __init__(self, *families) -> None:
        self.families = families

    def collect(self):
        return list(self.families)


def gauge(name, doc, labels, samples):
    g = GaugeMetricFamily(name, doc, labels=labels)
    for values, value in samples:
        g.add_metric(values, value)
    return g


FAMILIES = {
    "labels": gauge("yitong_vc_quota", "VC quota", ["vc", "resource"], [(["a", "cpu"], 2), (["a", "memory"], 2**34)]),
    "escaped values": gauge("x_y", "q", ["vc"], [(['a"b'], 1), (["c\\d"], 2), (["e\nf"], 3), (["日本"], 4)]),
    "no labels": gauge("yitong_up", "up", [], [([], 1)]),
    "labels out of order": gauge("x", "d", ["z", "a"], [(["1", "2"], 0.5)]),
    "odd floats": gauge(
        "x", "d", ["k"], [(["nan"], math.nan), (["inf"], math.inf), (["-inf"], -math.inf), (["big"], 1.5e12)]
    ),
    "doc with escapes": gauge("x", "a \\ b\nc", ["k"], [(["v"], 1)]),
    "empty": gauge("x", "nothing yet", ["k"], []),
    "a label name outside the legacy set": gauge("x", "d", ["vc.name"], [(["a"], 1)]),
    "a reserved label name": gauge("x", "d", ["__x"], [(["a"], 1)]),
    "a metric name outside the legacy set": gauge("yitong.x", "d", [], [([], 1)]),
    "timestamps": GaugeMetricFamily("x", "d", labels=["k"]),
    "counter": CounterMetricFamily("yitong_c", "c", labels=["k"], created=1700000000.0),
    "info": InfoMetricFamily("yitong_build", "b", value={"version": "1", "commit": "abc"}),
    "stateset": StateSetMetricFamily("yitong_s", "s", value={"a": True, "b": False}),
    "gauge histogram": GaugeHistogramMetricFamily("yitong_gh", "g", buckets=[("1.0", 2), ("+Inf", 3)], gsum_value=7),
    "summary": SummaryMetricFamily("yitong_sm", "s", count_value=4, sum_value=2.5),
}
FAMILIES["counter"].add_metric(["a"], 5, created=1700000000.25)
FAMILIES["timestamps"].add_metric(["a"], 3, timestamp=1700000000.5)


@pytest.mark.parametrize("family", FAMILIES.values(), ids=FAMILIES)
def test_families_are_written_as_generate_latest_writes_them(family):
    assert exposition.render([family]) == generate_latest(Families(family))


def test_the_request_instruments_are_written_as_generate_latest_writes_them():
    registry = CollectorRegistry()
    Counter("yitong_http_requests", "HTTP requests", ["route"], registry=registry).labels("/vcs").inc()
    Histogram("yitong_latency_seconds", "latency", ["route"], registry=registry).labels('/a"b').observe(0.2)
    families = [*registry.collect(), FAMILIES["labels"]]
    assert exposition.render(families) == generate_latest(Families(*families))


@pytest.fixture
def db(tmp_path):
    d = Database(f"sqlite:///{tmp_path / 'm.sqlite'}")
    d.upgrade()
    yield d
    d.dispose()


def _vc(s, name, quota):
    s.add(VC(name=name, quota=quota, groups=[], profiles=[], user_caps={}))


def _alloc(s, vc, ref, resources, kind="server"):
    s.add(Allocation(user="alice", vc=vc, profile="p", kind=kind, ref=ref, resources=resources))


def test_the_vc_gauges_follow_the_database(db):
    """StateCollector.render is generate_latest over its collect() after each change, and keeps the
    lines of the VCs that did not change."""
    collector = StateCollector(db, {"cpu": 8, "nvidia.com/gpu": 2})

    def check() -> None:
        assert collector.render() == generate_latest(Families(*collector.collect()))

    check()  # no VC
    with db.writing() as s:
        for name in ("b", "a", "c"):
            _vc(s, name, {"cpu": 4.0, "memory": 2**33})
    check()
    with db.writing() as s:
        _alloc(s, "a", "alice/", {"cpu": 1.5, "memory": 2**30})
        _alloc(s, "a", "job/1", {"cpu": 0.25, "nvidia.com/gpu": 1}, kind="job")
    check()
    kept_b = collector._lines["b"]
    with db.writing() as s:  # a's quota changes, c goes: b's lines are reused as they were
        s.query(VC).filter_by(name="a").update({"quota": {"cpu": 8.0, "memory": 2**33}})
        s.query(VC).filter_by(name="c").delete()
    check()
    assert collector._lines["b"] is kept_b and set(collector._lines) == {"a", "b"}
    assert 'yitong_vc_quota{resource="cpu",vc="a"} 8.0' in collector.render().decode().splitlines()
    assert 'yitong_vc_used{resource="nvidia.com/gpu",vc="a"} 1.0' in collector.render().decode().splitlines()


def test_a_scrape_is_every_familys_text(db):
    metrics = Metrics(db, {"cpu": 8})
    metrics.observe("GET", None, 200, 0.01)
    with db.writing() as s:
        _vc(s, "a", {"cpu": 2.0})
    assert metrics.render() == generate_latest(Families(*metrics.collect()))
