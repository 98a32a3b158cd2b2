"""Generate the reference pages from the code: never edit them by hand.

- ``docs/reference/openapi.json`` and ``docs/reference/rest.md`` from the platform service's
  OpenAPI spec;
- ``docs/reference/config.md`` from the traitlets help text of Yitong's configurable classes.

    .venv/bin/python docs/generate.py [--out docs/reference]

``tests/test_docs.py`` fails when the committed pages differ from what this prints.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "reference"
METHODS = ("get", "post", "put", "patch", "delete")


def openapi_spec() -> dict[str, Any]:
    from yitong_services.core.app import create_app
    from yitong_services.core.settings import load_settings

    with tempfile.TemporaryDirectory() as tmp:
        settings_file = Path(tmp, "settings.yaml")
        settings_file.write_text("backend: local\n")
        app = create_app(
            load_settings(settings_file, tmp),
            hub_api_url="http://127.0.0.1:1/hub/api",
            hub_api_token="unused",
            reconcile_interval=0,
        )
        return app.openapi()


def _schema_name(schema: dict[str, Any]) -> str:
    """A field's type in words: a model's name, ``list of X``, ``X or null`` (an optional field's
    ``anyOf``), a JSON type, or ``any`` for a schema that says nothing."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    for either in ("anyOf", "oneOf"):
        if either in schema:
            return " or ".join(dict.fromkeys(_schema_name(s) for s in schema[either]))
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_schema_name(schema.get('items', {}))}"
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind:
        return str(kind)
    return "object" if "properties" in schema or "additionalProperties" in schema else "any"


def rest_markdown(spec: dict[str, Any]) -> str:
    lines = [
        "# REST API reference",
        "",
        "Generated from the platform service's OpenAPI spec by `docs/generate.py`; the spec",
        "itself is [openapi.json](openapi.json) and is served at `/services/yitong/openapi.json`",
        "(Swagger UI at `/services/yitong/docs`). Authenticate with",
        '`Authorization: token <JupyterHub token>`. Refusals are JSON `{"detail": "..."}`.',
        "",
    ]
    for path, item in spec["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if not op:
                continue
            lines += [f"## {method.upper()} `{path}`", ""]
            if op.get("summary"):
                lines += [op["summary"], ""]
            if op.get("description"):
                lines += [op["description"].strip(), ""]
            params = op.get("parameters", [])
            if params:
                lines += ["| parameter | in | required | type |", "|---|---|---|---|"]
                for p in params:
                    lines.append(
                        f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'} "
                        f"| {_schema_name(p.get('schema', {}))} |"
                    )
                lines.append("")
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                lines += [f"Body: `{_schema_name(body['schema'])}`", ""]
            lines += ["| status | meaning |", "|---|---|"]
            for status, resp in op.get("responses", {}).items():
                lines.append(f"| {status} | {resp.get('description', '').replace('|', '/')} |")
            lines.append("")
    schemas = spec.get("components", {}).get("schemas", {})
    if schemas:
        lines += ["## Models", ""]
        for name, schema in schemas.items():
            lines += [f"### {name}", ""]
            if schema.get("description"):
                lines += [schema["description"].strip(), ""]
            props = schema.get("properties", {})
            if props:
                required = set(schema.get("required", []))
                lines += ["| field | type | required |", "|---|---|---|"]
                for field, fs in props.items():
                    lines.append(f"| `{field}` | {_schema_name(fs)} | {'yes' if field in required else 'no'} |")
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def configurables() -> list[type]:
    from yitong_spawner.authenticator import YitongAuthenticator
    from yitong_spawner.backends import YitongLocalProcessSpawner
    from yitong_spawner.slurm import YitongSlurmSpawner
    from yitong_spawner.spawner import YitongSpawner

    return [YitongSpawner, YitongLocalProcessSpawner, YitongSlurmSpawner, YitongAuthenticator]


def own_traits(cls: type) -> dict[str, Any]:
    """Config traits that Yitong's code defines (not the ones inherited from JupyterHub)."""
    return {
        name: trait
        for name, trait in cls.class_traits(config=True).items()
        if trait.this_class.__module__.startswith("yitong_")
        and (trait.this_class is cls or trait.this_class.__name__.endswith("Traits"))
    }


def config_markdown(classes: list[type]) -> str:
    lines = [
        "# Configuration reference",
        "",
        "Generated from the traitlets help text by `docs/generate.py`. Set these in",
        '`jupyterhub_config.py` (`c.YitongSpawner.backend = "slurm"`) or on the `jupyterhub`',
        "command line. Most installations only edit the settings file ([../settings.md](../settings.md)),",
        "which `jupyterhub_config.py` turns into these options.",
        "",
    ]
    for cls in classes:
        lines += [f"## {cls.__name__}", "", (cls.__doc__ or "").strip().split("\n\n")[0], ""]
        for name, trait in sorted(own_traits(cls).items()):
            try:
                default = trait.default_value_repr()
            except (AssertionError, TypeError):  # dynamic defaults (@default methods)
                default = "(computed)"
            lines += [f"### `{cls.__name__}.{name}`", "", f"{type(trait).__name__}, default `{default}`", ""]
            help_text = trait.help.strip()
            if help_text:
                lines += [_dedent(help_text), ""]
    return "\n".join(lines).rstrip() + "\n"


def _dedent(text: str) -> str:
    import textwrap

    first, _, rest = text.partition("\n")
    return (first.strip() + "\n" + textwrap.dedent(rest)).strip()


def generate(out: Path) -> dict[Path, str]:
    spec = openapi_spec()
    return {
        out / "openapi.json": json.dumps(spec, indent=2, sort_keys=True) + "\n",
        out / "rest.md": rest_markdown(spec),
        out / "config.md": config_markdown(configurables()),
    }


ROOT = Path(__file__).resolve().parent.parent


def client_types(spec: dict[str, Any]) -> dict[Path, str]:
    """The client-side types generated from the OpenAPI document (paths under the checkout)."""
    import importlib.util

    loader = importlib.util.spec_from_file_location("docs_api_types", Path(__file__).with_name("api_types.py"))
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    out = {ROOT / "extensions" / "yitong_lab" / "api_types.py": module.typed_dicts(spec)}
    ts = typescript_types(spec)
    if ts is not None:
        out[ROOT / "extensions" / "src" / "api" / "schema.d.ts"] = ts
    return out


def typescript_types(spec: dict[str, Any]) -> str | None:
    """``openapi-typescript`` (pinned in extensions/package.json) over the document; None before
    ``npm install`` in extensions/ (then only the Python types are checked)."""
    import subprocess
    import tempfile

    tool = ROOT / "extensions" / "node_modules" / ".bin" / "openapi-typescript"
    if not tool.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp, "openapi.json"), Path(tmp, "schema.d.ts")
        source.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
        subprocess.run([str(tool), str(source), "-o", str(target)], check=True, capture_output=True)
        return target.read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description="Generate docs/reference from the code")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for path, text in generate(args.out).items():
        path.write_text(text)
        print(f"wrote {path}")
    for path, text in client_types(json.loads((args.out / "openapi.json").read_text())).items():
        path.write_text(text)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
