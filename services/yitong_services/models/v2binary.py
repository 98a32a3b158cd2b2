"""The binary tensor extension of the Open Inference Protocol, turned into plain JSON (pure).

Clients such as tritonclient (``set_data_from_numpy(arr, binary_data=True)``, its default) and
KServe's send an infer request as a JSON header of ``Inference-Header-Content-Length`` bytes
followed by each binary input's raw bytes (``parameters.binary_data_size``), in input order.
MLServer does not read that extension, so the route rewrites such a request into the JSON one
it means before checking and passing it: each binary input gets its ``data`` (little-endian
numbers as JSON numbers, ``BYTES`` elements as their 4-byte length-prefixed strings) and the
request asks for JSON outputs, which every client of the extension reads too. A request whose
bytes do not add up is refused with the sentence for a 400.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

from ..core.limits import DocumentError, load_json

#: struct formats of the fixed-size datatypes (little-endian, as the extension says)
FORMATS = {
    "BOOL": "?",
    "UINT8": "B",
    "UINT16": "H",
    "UINT32": "I",
    "UINT64": "Q",
    "INT8": "b",
    "INT16": "h",
    "INT32": "i",
    "INT64": "q",
    "FP16": "e",
    "FP32": "f",
    "FP64": "d",
}


class BinaryRefused(ValueError):
    """The request's binary part does not match its header (a sentence for a 400)."""


def _strings(raw: bytes, count: int, name: str) -> list[str]:
    out, at = [], 0
    while at < len(raw):
        if at + 4 > len(raw):
            raise BinaryRefused(f"input {name!r}: a BYTES element's 4-byte length is cut short")
        (size,) = struct.unpack_from("<I", raw, at)
        at += 4
        if at + size > len(raw):
            raise BinaryRefused(f"input {name!r}: a BYTES element of {size} bytes runs past its data")
        try:
            out.append(raw[at : at + size].decode("utf-8"))
        except UnicodeDecodeError:
            raise BinaryRefused(
                f"input {name!r}: a BYTES element is not UTF-8 text; the model server takes BYTES as JSON strings"
            ) from None
        at += size
    if len(out) != count:
        raise BinaryRefused(f"input {name!r} has {len(out)} BYTES elements; its shape holds {count}")
    return out


def _values(raw: bytes, datatype: str, count: int, name: str) -> list[Any]:
    if datatype == "BYTES":
        return _strings(raw, count, name)
    fmt = FORMATS.get(datatype)
    if fmt is None:
        raise BinaryRefused(f"input {name!r}: datatype {datatype!r} is not one of the protocol's")
    size = struct.calcsize(fmt)
    if len(raw) != size * count:
        raise BinaryRefused(
            f"input {name!r}: {len(raw)} bytes of {datatype}; its shape holds {count} ({size * count} bytes)"
        )
    return list(struct.unpack(f"<{count}{fmt}", raw))


def to_json(body: bytes, header: str) -> dict[str, Any]:
    """The JSON request a binary-extension request (``body``, its header ``header`` bytes long) means."""
    if not header.isdigit() or int(header) > len(body):
        raise BinaryRefused(f"Inference-Header-Content-Length {header[:20]!r} is not a length within the body")
    cut = int(header)
    try:
        doc = load_json(body[:cut].decode(), what="the request")
    except DocumentError as refused:
        raise BinaryRefused(str(refused)) from None
    except (ValueError, UnicodeDecodeError) as refused:
        raise BinaryRefused(f"the request's JSON header is not JSON: {refused}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("inputs"), list):
        raise BinaryRefused("the request has no inputs list")
    at = cut
    for tensor in doc["inputs"]:
        params = tensor.get("parameters") if isinstance(tensor, dict) else None
        if not isinstance(params, dict) or "binary_data_size" not in params:
            continue
        name, size = tensor.get("name"), params.pop("binary_data_size")
        shape = tensor.get("shape")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or at + size > len(body):
            raise BinaryRefused(f"input {name!r}: binary_data_size {size!r} runs past the body")
        if not isinstance(shape, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
        ):
            raise BinaryRefused(f"input {name!r}: shape must be a list of non-negative integers")
        tensor["data"] = _values(body[at : at + size], str(tensor.get("datatype")), math.prod(shape), str(name))
        at += size
        if not params:
            tensor.pop("parameters")
    if at != len(body):
        raise BinaryRefused(f"{len(body) - at} bytes after the last binary input belong to no input")
    # JSON outputs: every client of the extension reads them (the model server writes no binary)
    for out in doc.get("outputs") or []:
        if isinstance(out, dict) and isinstance(out.get("parameters"), dict):
            out["parameters"].pop("binary_data", None)
    if isinstance(doc.get("parameters"), dict):
        doc["parameters"].pop("binary_data_output", None)
    return doc


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
