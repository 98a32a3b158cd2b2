"""An Open Inference Protocol infer request checked against a version's signature (pure).

MLServer answers a tensor of the wrong shape with a 500 from inside the runtime; where the
version was registered with a signature, the platform refuses such a request first, with a
sentence and a 400 in the protocol's error shape."""

from __future__ import annotations

from typing import Any


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
        if want["shape"] and not _fits(shape, want["shape"]):
            return f"input {tensor.get('name')!r} has shape {shape}; the model takes {want['shape']} (-1: any size)"
    return None
