"""The Helm chart's test helpers (tests/helm): a chart directory with a z2jh stand-in, parsing, versions.

- ``make_chart_dir(dest)``: a copy of the chart with ``charts/jupyterhub`` filled by a stand-in for
  zero-to-jupyterhub 4.4.0 (its repository is unreachable here): z2jh's own ``values.yaml`` and
  ``values.schema.json`` (tests/helm/data/z2jh, from github.com/jupyterhub/zero-to-jupyterhub-k8s
  tag 4.4.0) and no templates. Helm coalesces and validates the values we pass to z2jh exactly as
  it would with the real chart; only z2jh's own objects are not rendered.
- ``K8S_VERSIONS``: the two newest Kubernetes versions kubernetes-validate ships.
- ``crd_validators(name)``: a strict validator per kind from a file of CRD schemas in tests/helm/data
  (Kueue's, prometheus-operator's): no field the schema does not name, as kubernetes-validate.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "yitong"
DATA = ROOT / "tests" / "helm" / "data"
Z2JH_VERSION = "4.4.0"


def _newest_kube_versions(n: int = 2) -> list[str]:
    from importlib.resources import files

    names = [p.name for p in files("kubernetes_validate").joinpath("kubernetes-json-schema").iterdir()]
    versions = sorted(
        {tuple(int(x) for x in name[1:].split("-")[0].split(".")[:2]) for name in names if "strict" in name}
    )
    return [f"{major}.{minor}" for major, minor in versions[-n:]]


K8S_VERSIONS = _newest_kube_versions()


def _crd_strict(node: Any) -> Any:
    """kubernetes-validate's strictness for a CRD schema: no field the schema does not name."""
    if isinstance(node, dict):
        out = {k: _crd_strict(v) for k, v in node.items()}
        if "properties" in node and "additionalProperties" not in node:
            if not node.get("x-kubernetes-preserve-unknown-fields"):
                out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_crd_strict(v) for v in node]
    return node


def crd_validators(name: str) -> dict[str, Any]:
    import jsonschema

    schemas = json.loads((DATA / name).read_text())["schemas"]
    return {kind: jsonschema.Draft7Validator(_crd_strict(schema)) for kind, schema in schemas.items()}


def z2jh_schema() -> dict[str, Any]:
    return yaml.safe_load((DATA / "z2jh" / "values.schema.yaml").read_text())


def z2jh_defaults() -> dict[str, Any]:
    return yaml.safe_load((DATA / "z2jh" / "values.yaml").read_text())


def make_chart_dir(dest: Path) -> Path:
    chart = dest / "yitong"
    shutil.copytree(CHART, chart)
    stub = chart / "charts" / "jupyterhub"
    stub.mkdir(parents=True)
    (stub / "Chart.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v2", "name": "jupyterhub", "version": Z2JH_VERSION, "kubeVersion": ">=1.32.0-0"})
    )
    shutil.copy(DATA / "z2jh" / "values.yaml", stub / "values.yaml")
    (stub / "values.schema.json").write_text(json.dumps(z2jh_schema()))
    return chart


def parse(rendered: dict[str, str]) -> list[dict[str, Any]]:
    objects = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return objects


def by_kind(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        out.setdefault(obj["kind"], []).append(obj)
    return out
