"""Fixtures for the Helm chart (helm/yitong), rendered by Helm's own SDK (helm-python-sdk, no cluster).

- ``chart_dir``: the chart with a zero-to-jupyterhub stand-in as its dependency (helm_helpers.py).
- ``render(values, namespace=...)``: the chart's objects as dicts, values deep-merged over
  values.yaml and checked against both schemas by Helm (``render.chart``: the loaded chart).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helm_helpers import make_chart_dir, parse


@pytest.fixture(scope="session")
def chart_dir(tmp_path_factory) -> Path:
    return make_chart_dir(tmp_path_factory.mktemp("chart"))


@pytest.fixture(scope="session")
def render(chart_dir):
    import helm_python as helm

    chart = helm.Chart.load(str(chart_dir))

    def render(values: dict[str, Any] | None = None, namespace: str = "jupyterhub") -> list[dict[str, Any]]:
        return parse(chart.render(values or {}, name="yitong", namespace=namespace, is_install=True))

    render.chart = chart
    return render
