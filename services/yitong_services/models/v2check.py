"""An Open Inference Protocol infer request checked before it reaches the model server (pure).

Two checks, each a sentence for a 400 in the protocol's error shape (``{"error": ...}``):

- ``protocol_refusal``: what the protocol itself says of a request (an ``inputs`` list of
  tensors with a name, a shape of non-negative integers, one of its datatypes, and data of that
  type with as many elements as the shape holds). MLServer answers a wrong datatype with
  FastAPI's 422 ``detail`` list and a data/shape mismatch not at all (it passes to the runtime).
- ``refusal``: the request against a version's signature, where it was registered with one
  (MLServer answers a tensor of the wrong shape with a 500 from inside the runtime).
"""

from __future__ import annotations

import json
import math
from itertools import chain
from typing import Any

#: the protocol's tensor datatypes and the JSON values their data holds
DATATYPES: dict[str, str] = {
    "BOOL": "bool",
    **{t: "int" for t in ("UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64")},
    **{t: "number" for t in ("FP16", "FP32", "FP64")},
    "BYTES": "str",
}
_JSON_TYPES = {"bool": "true/false", "int": "integers", "number": "numbers", "str": "strings"}


#: the Python types (as ``json`` decodes) each kind of data may hold; ``bool`` is no ``int`` here
_TYPES: dict[str, frozenset[type]] = {
    "bool": frozenset({bool}),
    "int": frozenset({int}),
    "number": frozenset({int, float}),
    "str": frozenset({str}),
}


def _leaves(data: list[Any], depth: int = 0) -> list[Any]:
    """The scalars of a (possibly nested) data list, in order (a flat list is returned as it is)."""
    types = set(map(type, data))
    if list not in types or depth >= 32:
        return data
    if types == {list}:  # rows of a matrix: flattened at C speed
        return _leaves(list(chain.from_iterable(data)), depth + 1)
    out: list[Any] = []
    for item in data:
        if isinstance(item, list):
            out.extend(_leaves(item, depth + 1))
        else:
            out.append(item)
    return out


def tensor_refusal(tensor: Any) -> str | None:
    """Why one request input is not a tensor of the protocol (None: it is)."""
    if not isinstance(tensor, dict):
        return "every input must be an object with name, shape, datatype and data"
    name = tensor.get("name")
    if not isinstance(name, str) or not name:
        return "every input needs a name (a string)"
    shape = tensor.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        return f"input {name!r}: shape must be a list of non-negative integers"
    datatype = tensor.get("datatype")
    if datatype not in DATATYPES:
        return f"input {name!r}: datatype {datatype!r} is not one of {', '.join(DATATYPES)}"
    params = tensor.get("parameters")
    if isinstance(params, dict) and "binary_data_size" in params:
        return None  # its data travels after the JSON header (binary tensor extension)
    data = tensor.get("data")
    if not isinstance(data, list):
        return f"input {name!r}: data must be a list"
    leaves = _leaves(data)
    if len(leaves) != math.prod(shape):
        return f"input {name!r} has {len(leaves)} elements; its shape {shape} holds {math.prod(shape)}"
    kind = DATATYPES[datatype]
    if not set(map(type, leaves)) <= _TYPES[kind]:
        value = next(v for v in leaves if type(v) not in _TYPES[kind])
        return f"input {name!r}: {datatype} data must be {_JSON_TYPES[kind]}, not {json.dumps(value)[:40]}"
    return None


def protocol_refusal(request: Any) -> str | None:
    """Why ``request`` (the parsed JSON body of an infer call) breaks the protocol (None: it
    does not)."""
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        return "the request has no inputs list"
    if not request["inputs"]:
        return "the request's inputs list is empty"
    names: set[str] = set()
    for tensor in request["inputs"]:
        refused = tensor_refusal(tensor)
        if refused:
            return refused
        if tensor["name"] in names:
            return f"input {tensor['name']!r} appears twice"
        names.add(tensor["name"])
    outputs = request.get("outputs", [])
    if not isinstance(outputs, list) or not all(
        isinstance(o, dict) and isinstance(o.get("name"), str) for o in outputs
    ):
        return "outputs must be a list of objects with a name"
    if "id" in request and not isinstance(request["id"], str):
        return "id must be a string"
    return None


def _fits(shape: list[Any], want: list[int]) -> bool:
    return len(shape) == len(want) and all(w == -1 or s == w for s, w in zip(shape, want, strict=True))


def refusal(request: Any, signature: dict[str, Any]) -> str | None:
    """Why ``request`` (the parsed JSON body) does not fit ``signature`` (None: it fits, or no
    signature says anything)."""
    inputs = signature.get("inputs") or []
    if not inputs:
        return None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        return "the request has no inputs list"
    by_name = {i["name"]: i for i in inputs}
    single = inputs[0] if len(inputs) == 1 else None
    for tensor in request["inputs"]:
        if not isinstance(tensor, dict):
            return "every input must be an object with name, shape, datatype and data"
        want = by_name.get(tensor.get("name")) or single
        if want is None:
            return f"input {tensor.get('name')!r} is not one of {', '.join(sorted(by_name))}"
        shape = tensor.get("shape")
        if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
            return f"input {tensor.get('name')!r}: shape must be a list of integers"
        have, takes = tensor.get("datatype"), want.get("datatype")
        if takes in DATATYPES and have in DATATYPES and (have == "BYTES") != (takes == "BYTES"):
            return (
                f"input {tensor.get('name')!r} is {have} ({_JSON_TYPES[DATATYPES[have]]}); "
                f"the model takes {takes} ({_JSON_TYPES[DATATYPES[takes]]})"
            )
        if want["shape"] and not _fits(shape, want["shape"]):
            return f"input {tensor.get('name')!r} has shape {shape}; the model takes {want['shape']} (-1: any size)"
    return None


def error_sentence(status: int, body: bytes) -> str | None:
    """The sentence for a model server's error answer that is not in the protocol's error shape
    (FastAPI's ``{"detail": [...]}`` from MLServer's request validation, a plain-text 500); None
    when ``body`` already is ``{"error": "..."}``."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("detail"), list) and doc["detail"]:
        first = doc["detail"][0] if isinstance(doc["detail"][0], dict) else {}
        where = ".".join(str(p) for p in first.get("loc", []) if p != "body")
        msg = str(first.get("msg", "invalid"))
        return f"the request does not fit the protocol: {where}: {msg}" if where else f"the request is invalid: {msg}"
    if isinstance(doc, dict) and isinstance(doc.get("detail"), str):
        return doc["detail"]
    text = body.decode("utf-8", "replace").strip()[:300]
    return f"the model server answered {status}" + (f": {text}" if text else "")


def metadata_path(rest: str) -> bool:
    """Whether ``rest`` (the path after ``/v2/``) is a model's metadata: ``models/<m>[/versions/<v>]``."""
    parts = rest.split("/")
    return parts[0] == "models" and (len(parts) == 2 or (len(parts) == 4 and parts[2] == "versions")) and all(parts)


def with_signature(body: bytes, signature: dict[str, Any]) -> bytes | None:
    """A model server's metadata answer with the version's registered signature filled in where it
    left ``inputs``/``outputs`` empty (MLServer does for a model without a settings signature);
    None when there is nothing to fill or the body is not a metadata object."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or "name" not in doc:
        return None
    filled = False
    for key in ("inputs", "outputs"):
        tensors = [
            {k: t[k] for k in ("name", "datatype", "shape") if k in t}
            for t in signature.get(key) or []
            if isinstance(t, dict) and "name" in t
        ]
        if tensors and not doc.get(key):
            doc[key], filled = tensors, True
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode() if filled else None


def health_body(rest: str) -> dict[str, Any] | None:
    """The body the protocol's text gives a health answer (``$live_server_response``,
    ``$ready_server_response``, ``$ready_model_response``) for the path after ``/v2/``, where the
    model server answers 200 with none (MLServer does; KServe's own client reads ``live`` and
    ``ready``); None for other paths."""
    if rest == "health/live":
        return {"live": True}
    if rest == "health/ready":
        return {"ready": True}
    parts = rest.split("/")
    if (
        len(parts) in (3, 5)
        and parts[0] == "models"
        and parts[-1] == "ready"
        and (len(parts) == 3 or parts[2] == "versions")
    ):
        return {"name": parts[1], "ready": True}
    return None
