"""The Prometheus text format (0.0.4) of metric families, written fast (pure).

``prometheus_client.generate_latest`` checks and escapes every label *name* of every sample with
regular expressions (its UTF-8 name support) and formats each line through several calls: about
half of a scrape of the platform's ``/metrics`` with a few hundred VCs (docs/benchmarks.md,
"The exporter's scrape"). The platform's names are all in the legacy character set, so
:func:`render` checks them once per family and writes each sample with one format call. Its
output is byte for byte what ``generate_latest`` writes for the same families
(tests/services/core/test_exposition.py); a family with a name outside that set is handed to
``generate_latest`` itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^(?!__)[a-zA-Z_][a-zA-Z0-9_]*$")
#: the text format's names of OpenMetrics types (as generate_latest munges them)
_TYPES = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}
_OM_SUFFIXES = ("_created", "_gsum", "_gcount")


def _value(text: str) -> str:
    if "\\" in text or "\n" in text or '"' in text:
        return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return text


def _plain(metric: Metric) -> bool:
    """A family :func:`render` writes itself: every metric and label name in the legacy character
    set (what generate_latest then writes unescaped)."""
    if not _NAME.match(metric.name):
        return False
    names: set[str] = set()
    for sample in metric.samples:
        if not _NAME.match(sample.name):
            return False
        names.update(sample.labels)
    return all(_LABEL.match(n) for n in names)


class _One:
    def __init__(self, metric: Metric) -> None:
        self.metric = metric

    def collect(self) -> Iterable[Metric]:
        return [self.metric]


def _line(name: str, labels: dict[str, str], value: float, timestamp: Any = None) -> str:
    if labels:
        inner = ",".join(f'{k}="{_value(labels[k])}"' for k in sorted(labels))
        line = f"{name}{{{inner}}} {floatToGoString(value)}"
    else:
        line = f"{name} {floatToGoString(value)}"
    if timestamp is not None:
        line += f" {int(float(timestamp) * 1000):d}"
    return line + "\n"


def header(metric: Metric) -> str:
    """A gauge family's ``# HELP`` and ``# TYPE`` lines."""
    doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {metric.name} {doc}\n# TYPE {metric.name} gauge\n"


def samples(metric: Metric) -> str:
    """A gauge family's sample lines (labels sorted by name, as ``generate_latest``)."""
    return "".join(_line(s.name, s.labels, s.value, s.timestamp) for s in metric.samples)


def _family(metric: Metric) -> str:
    """``generate_latest``'s text of one family: counters named ``_total``, OpenMetrics-only samples
    (``_created``, ``_gsum``, ``_gcount``) as gauges after it."""
    name, kind = metric.name, metric.type
    if kind == "counter":
        name += "_total"
    elif kind == "info":
        name += "_info"
    kind = _TYPES.get(kind, kind)
    doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
    out = [f"# HELP {name} {doc}\n# TYPE {name} {kind}\n"]
    extra: dict[str, list[str]] = {}
    for s in metric.samples:
        suffix = next((x for x in _OM_SUFFIXES if s.name == metric.name + x), None)
        line = _line(s.name, s.labels, s.value, s.timestamp)
        if suffix is None:
            out.append(line)
        else:
            extra.setdefault(suffix, []).append(line)
    for suffix, lines in sorted(extra.items()):
        out.append(f"# HELP {metric.name}{suffix} {doc}\n# TYPE {metric.name}{suffix} gauge\n")
        out += lines
    return "".join(out)


def render(metrics: Iterable[Metric]) -> bytes:
    """The families' exposition, as ``generate_latest`` over a registry of them writes it."""
    return "".join(_family(m) if _plain(m) else generate_latest(_One(m)).decode() for m in metrics).encode()
