"""The generated reference pages match the code (regenerate with `make docs`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_pages_are_current(tmp_path):
    generated = _generator().generate(tmp_path)
    for path, text in generated.items():
        committed = ROOT / "docs" / "reference" / path.name
        assert committed.exists(), f"{committed} is missing: run `make docs`"
        assert committed.read_text() == text, f"{committed} is stale: run `make docs`"


def test_every_route_is_documented(tmp_path):
    gen = _generator()
    spec = gen.openapi_spec()
    ops = [(p, m) for p, item in spec["paths"].items() for m in gen.METHODS if m in item]
    assert len(ops) >= 15
    for path, method in ops:
        op = spec["paths"][path][method]
        assert op.get("description"), f"{method.upper()} {path} has no docstring"
    text = gen.rest_markdown(spec)
    for path, method in ops:
        assert f"## {method.upper()} `{path}`" in text


def test_config_reference_covers_the_spawner_traits():
    gen = _generator()
    text = gen.config_markdown(gen.configurables())
    for trait in ("backend", "platform_api_url", "user_api_url", "kube_namespace_prefix", "slurm_partition"):
        assert f"`YitongSpawner.{trait}`" in text
    assert "`YitongAuthenticator.password_file`" in text


def test_client_types_are_current():
    """The SDK's TypedDicts are generated from the committed OpenAPI document."""
    import json

    spec = json.loads((ROOT / "docs" / "reference" / "openapi.json").read_text())
    for path, text in _generator().client_types(spec).items():
        assert path.exists(), f"{path} is missing: run `make docs`"
        assert path.read_text() == text, f"{path} is stale: run `make docs`"
