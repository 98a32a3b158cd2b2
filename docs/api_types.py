"""Python TypedDicts for the REST models, built from the service's OpenAPI document.

A pure builder: ``typed_dicts(spec)`` returns the text of ``extensions/yitong_lab/api_types.py``;
``docs/generate.py`` writes it and ``tests/test_docs.py`` fails when the committed file is stale.
"""

from __future__ import annotations

import json
from typing import Any

HEADER = '''"""REST models of the platform service as TypedDicts (generated: do not edit).

Written by ``docs/generate.py`` from ``docs/reference/openapi.json``; ``tests/test_docs.py``
fails when this file is stale.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

'''

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def _literal(value: Any) -> str:
    """A literal as ruff format writes it (double quotes)."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def annotation(schema: dict[str, Any]) -> str:
    """The Python annotation for one JSON schema."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "enum" in schema:
        return "Literal[" + ", ".join(_literal(v) for v in schema["enum"]) + "]"
    if "const" in schema:
        return f"Literal[{_literal(schema['const'])}]"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts: list[str] = []
            for sub in schema[key]:
                text = annotation(sub)
                if text not in parts:
                    parts.append(text)
            return " | ".join(parts)
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return annotation(schema["allOf"][0])
    kind = schema.get("type")
    if kind == "array":
        return f"list[{annotation(schema.get('items', {}))}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        value = annotation(extra) if isinstance(extra, dict) else "Any"
        return f"dict[str, {value}]"
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind]
    return "Any"


def typed_dict(name: str, schema: dict[str, Any]) -> str:
    """One ``class Name(TypedDict)`` block."""
    lines = [f"class {name}(TypedDict):"]
    if schema.get("description"):
        lines.append(f"    {_literal(schema['description'].strip().splitlines()[0])}")
        lines.append("")
    required = set(schema.get("required", []))
    properties = schema.get("properties", {})
    if not properties:
        lines.append("    pass")
    for field, sub in properties.items():
        text = annotation(sub)
        if field not in required:
            text = f"NotRequired[{text}]"
        lines.append(f"    {field}: {text}")
    return "\n".join(lines) + "\n"


def typed_dicts(spec: dict[str, Any]) -> str:
    """The module text: every object schema of the document, sorted by name."""
    schemas = spec.get("components", {}).get("schemas", {})
    blocks = [
        typed_dict(name, schema)
        for name, schema in sorted(schemas.items())
        if schema.get("type") == "object" or "properties" in schema
    ]
    aliases = [
        f"{name} = {annotation(schema)}\n"
        for name, schema in sorted(schemas.items())
        if not (schema.get("type") == "object" or "properties" in schema)
    ]
    names = sorted(schemas)
    exports = "__all__ = [\n" + "".join(f"    {_literal(n)},\n" for n in names) + "]\n"
    body = "\n\n".join(blocks)
    tail = ("\n\n" + "".join(aliases)) if aliases else ""
    return HEADER + "\n" + body + tail + "\n\n" + exports
