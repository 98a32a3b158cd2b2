"""Input limits: request body sizes per route class, document nesting depth, field lengths.

Body sizes are settings (``service.limits``, see :class:`LimitsSettings`); field lengths, list
lengths and the nesting depth are part of the API's contract and appear in its OpenAPI document
(``maxLength``, ``maxItems``), so they are constants here. Every refusal is a 4xx with a
sentence naming the limit: 413 for a body, 422 for a field or a document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import yaml
from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_ID = 2**63 - 1  # ids and version numbers are int64 in the database
MAX_DEPTH = 32  # nesting of JSON/YAML documents (job specs, metrics, patches)
MAX_SHORT = 255  # images, kernels, group and user names, references
MAX_TEXT = 4096  # descriptions, display names, reasons
MAX_MESSAGE = 16384  # commit messages
MAX_ITEMS = 256  # groups, profiles, inputs, env variables, metrics
MAX_ARGS = 4096  # arguments of a command
MAX_COMMAND = 65536  # a shell command or one argument, in characters


class LimitsSettings(BaseModel):
    """``service.limits``: the largest request bodies, by route class (413 above)."""

    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(
        2**20, ge=1024, description="JSON/YAML bodies (job specs, VCs, profiles, datasets, patches, metrics)"
    )
    max_manifest_bytes: int = Field(
        256 * 2**20,
        ge=1024,
        description="dataset manifests and hash lists: version commits, objects/missing, fetch",
    )


def clip(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for echoing input in a sentence."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_LONG_RUN = re.compile(r"\S{121,}")


def clip_runs(text: str) -> str:
    """``text`` with each run of more than 120 non-space characters (an echoed name, a path, a
    value) clipped by :func:`clip` and its length said, so a sentence stays readable."""
    return _LONG_RUN.sub(lambda m: f"{clip(m.group(0))} ({len(m.group(0))} characters)", text)


def human(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


UPLOAD_RE = re.compile(r"/objects/(pack|[^/]+/upload)$")
MANIFEST_RE = re.compile(r"/(datasets/[^/]+/[^/]+/versions(/[^/]+/fetch)?|objects/missing)$")


def body_limit(path: str, limits: LimitsSettings) -> tuple[int, str] | None:
    """``(bytes, setting)`` for a request path; None for uploads (their handlers stream them
    against ``storage.max_upload_bytes``)."""
    if UPLOAD_RE.search(path):
        return None
    if MANIFEST_RE.search(path):
        return limits.max_manifest_bytes, "service.limits.max_manifest_bytes"
    return limits.max_body_bytes, "service.limits.max_body_bytes"


def too_large(size: int | None, limit: int, setting: str) -> str:
    what = f"the request body of {human(size)}" if size is not None else "the request body"
    return f"{what} exceeds the {human(limit)} limit ({setting})"


class BodyLimit:
    """ASGI middleware: 413 when ``Content-Length`` is over the route's limit, else count the
    body while the app reads it and refuse (413) at the first byte over."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], tuple[int, str] | None]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self.limit_for(scope["path"]) if scope["type"] == "http" else None
        if found is None:
            return await self.app(scope, receive, send)
        limit, setting = found
        declared = dict(scope["headers"]).get(b"content-length", b"").decode("latin-1").strip()
        if declared.isdigit() and int(declared) > limit:
            response = JSONResponse({"detail": too_large(int(declared), limit, setting)}, status_code=413)
            return await response(scope, receive, send)
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise HTTPException(413, too_large(None, limit, setting))
            return message

        await self.app(scope, counted, send)


class DocumentError(ValueError):
    """A document that cannot be accepted, with the sentence why."""


def check_depth(doc: Any, max_depth: int = MAX_DEPTH, what: str = "the document") -> Any:
    """``doc`` unchanged, or DocumentError when lists/maps nest deeper than ``max_depth``."""
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            raise DocumentError(f"{what} nests lists and maps deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children)
    return doc


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases (no 'billion laughs'), with a depth limit, and
    refusing a key given twice in one map (PyYAML keeps the last silently)."""

    max_depth = MAX_DEPTH

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _value in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"the key {clip(str(key))!r} is given twice in one map (first at line {seen[key] + 1})",
                        key_node.start_mark,
                    )
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not accepted; write the value out", mark)
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > self.max_depth and self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, f"lists and maps nest deeper than {self.max_depth} levels", mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_yaml(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``yaml.safe_load`` that refuses aliases and nesting deeper than ``max_depth`` (yaml.YAMLError)."""
    loader = _Loader(text)
    loader.max_depth = max_depth
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise DocumentError(f"the key {clip(key)!r} is given twice in one object")
        doc[key] = value
    return doc


def load_json(text: str, max_depth: int = MAX_DEPTH, what: str = "the document") -> Any:
    """``json.loads`` with the depth limit, refusing a key given twice in one object
    (DocumentError; ValueError when not JSON)."""
    try:
        doc = json.loads(text, object_pairs_hook=_unique_pairs)
    except DocumentError as e:
        raise DocumentError(f"{what}: {e}") from None
    except RecursionError:
        raise DocumentError(f"{what} nests lists and maps deeper than {max_depth} levels") from None
    return check_depth(doc, max_depth, what)
