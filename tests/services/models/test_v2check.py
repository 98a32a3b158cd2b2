"""The Open Inference Protocol checks the endpoint route makes before MLServer sees a request,
the error sentences it makes of MLServer's other error shapes, and the health bodies (pure)."""

from __future__ import annotations

import json

import pytest

from yitong_services.models import v2check

X = {"name": "x", "shape": [2], "datatype": "FP32", "data": [1.0, 2.5]}


@pytest.mark.parametrize(
    "request_,refused",
    [
        ({"inputs": [X]}, None),
        ({"inputs": [X | {"data": [1, 2]}]}, None),  # integers are numbers
        ({"inputs": [X | {"shape": [1, 2], "data": [[1.0, 2.0]]}]}, None),  # nested data
        ({"inputs": [X | {"shape": [0], "data": []}]}, None),
        ({"inputs": [{"name": "s", "shape": [1], "datatype": "BYTES", "data": ["a"]}]}, None),
        ({"inputs": [{"name": "b", "shape": [2], "datatype": "BOOL", "data": [True, False]}]}, None),
        ({"inputs": [X | {"parameters": {"binary_data_size": 8}, "data": None}]}, None),  # binary extension
        ({"inputs": [X], "outputs": [{"name": "x"}], "id": "7"}, None),
        ([], "the request has no inputs list"),
        ({"inputs": []}, "the request's inputs list is empty"),
        ({"inputs": [3]}, "every input must be an object with name, shape, datatype and data"),
        ({"inputs": [X | {"name": ""}]}, "every input needs a name (a string)"),
        ({"inputs": [X | {"shape": [-1]}]}, "input 'x': shape must be a list of non-negative integers"),
        ({"inputs": [X | {"shape": [True]}]}, "input 'x': shape must be a list of non-negative integers"),
        ({"inputs": [X | {"datatype": "fp32"}]}, "input 'x': datatype 'fp32' is not one of BOOL, UINT8, UINT16,"),
        ({"inputs": [X | {"data": 1.0}]}, "input 'x': data must be a list"),
        ({"inputs": [X | {"shape": [3]}]}, "input 'x' has 2 elements; its shape [3] holds 3"),
        ({"inputs": [X | {"data": [1.0, "2"]}]}, "input 'x': FP32 data must be numbers, not \"2\""),
        ({"inputs": [X | {"data": [1.0, None]}]}, "input 'x': FP32 data must be numbers, not null"),
        ({"inputs": [X | {"data": [1.0, True]}]}, "input 'x': FP32 data must be numbers, not true"),
        ({"inputs": [X | {"datatype": "INT64", "data": [1, 2.0]}]}, "input 'x': INT64 data must be integers, not 2.0"),
        ({"inputs": [X | {"datatype": "BOOL", "data": [1, 0]}]}, "input 'x': BOOL data must be true/false, not 1"),
        ({"inputs": [X | {"datatype": "BYTES", "data": [1, 0]}]}, "input 'x': BYTES data must be strings, not 1"),
        ({"inputs": [X, X]}, "input 'x' appears twice"),
        ({"inputs": [X], "outputs": [{}]}, "outputs must be a list of objects with a name"),
        ({"inputs": [X], "id": 7}, "id must be a string"),
    ],
)
def test_protocol_refusal(request_, refused):
    got = v2check.protocol_refusal(request_)
    assert got == refused if refused is None or not refused.endswith(",") else got.startswith(refused), got


@pytest.mark.parametrize(
    "status,body,sentence",
    [
        (404, {"error": "Model nope not found"}, None),
        (
            422,
            {"detail": [{"loc": ["body", "inputs", 0, "datatype"], "msg": "Input should be 'BOOL'"}]},
            "the request does not fit the protocol: inputs.0.datatype: Input should be 'BOOL'",
        ),
        (422, {"detail": [{"loc": ["body"], "msg": "JSON decode error"}]}, "the request is invalid: JSON decode error"),
        (400, {"detail": "bad"}, "bad"),
        (500, b"Internal Server Error", "the model server answered 500: Internal Server Error"),
        (502, b"", "the model server answered 502"),
    ],
)
def test_error_sentence(status, body, sentence):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    assert v2check.error_sentence(status, raw) == sentence


@pytest.mark.parametrize(
    "rest,body",
    [
        ("health/live", {"live": True}),
        ("health/ready", {"ready": True}),
        ("models/m/ready", {"name": "m", "ready": True}),
        ("models/m/versions/v2/ready", {"name": "m", "ready": True}),
        ("models/m", None),
        ("models/m/versions/ready", None),
        ("", None),
    ],
)
def test_health_body(rest, body):
    assert v2check.health_body(rest) == body
