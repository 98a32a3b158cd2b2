"""The Prometheus text format (0.0.4) of gauge families, written fast (pure).

``prometheus_client.generate_latest`` checks and escapes every label *name* of every sample with
regular expressions (its UTF-8 name support) and formats each line through several calls: about
half of a scrape of the platform's ``/metrics`` with a few hundred VCs (docs/benchmarks.md,
"The exporter's scrape"). The platform's own families are gauges with fixed, valid label names, so
:func:`render` checks the names once per family and writes each sample with one format call. Its
output is byte for byte what ``generate_latest`` writes for the same families
(tests/services/core/test_exposition.py); any other family (counters, histograms, samples with a
timestamp, names outside the legacy character set) is handed to ``generate_latest`` itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from prometheus_client import generate_latest
from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _value(text: str) -> str:
    if "\\" in text or "\n" in text or '"' in text:
        return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return text


def _plain_gauge(metric: Metric) -> bool:
    """A family :func:`render` writes itself: a gauge whose names need no escaping, no timestamps."""
    if metric.type != "gauge" or not _NAME.match(metric.name):
        return False
    names: set[str] = set()
    for sample in metric.samples:
        if sample.name != metric.name or sample.timestamp is not None:
            return False
        names.update(sample.labels)
    return all(_LABEL.match(n) for n in names)


class _One:
    def __init__(self, metric: Metric) -> None:
        self.metric = metric

    def collect(self) -> Iterable[Metric]:
        return [self.metric]


def header(metric: Metric) -> str:
    """A gauge family's ``# HELP`` and ``# TYPE`` lines."""
    doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {metric.name} {doc}\n# TYPE {metric.name} gauge\n"


def samples(metric: Metric) -> str:
    """A plain gauge family's sample lines (labels sorted by name, as ``generate_latest``)."""
    name = metric.name
    out = []
    for sample in metric.samples:
        labels = sample.labels
        if labels:
            inner = ",".join(f'{k}="{_value(labels[k])}"' for k in sorted(labels))
            out.append(f"{name}{{{inner}}} {floatToGoString(sample.value)}\n")
        else:
            out.append(f"{name} {floatToGoString(sample.value)}\n")
    return "".join(out)


def render(metrics: Iterable[Metric]) -> bytes:
    """The families' exposition, as ``generate_latest`` over a registry of them writes it."""
    out: list[str] = []
    for metric in metrics:
        if _plain_gauge(metric):
            out += (header(metric), samples(metric))
        else:
            out.append(generate_latest(_One(metric)).decode())
    return "".join(out).encode()
