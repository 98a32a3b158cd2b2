"""Parsing what people type and formatting what the API returns (pure functions)."""

import pytest

from yitong_lab.units import format_amount, format_resources, parse_quantity, parse_resources

GiB = 2**30


@pytest.mark.parametrize(
    "resource, text, expected",
    [
        ("cpu", "8", 8.0),
        ("cpu", "1.5", 1.5),
        ("cpu", "500m", 0.5),
        ("memory", "16Gi", 16 * GiB),
        ("memory", "512Mi", 512 * 2**20),
        ("memory", "512M", 512 * 10**6),
        ("memory", "1024", 1024),
        ("memory", 2 * GiB, 2 * GiB),
        ("nvidia.com/gpu", "2", 2),
        ("huawei.com/Ascend910", "8", 8),
    ],
)
def test_parse_quantity(resource, text, expected):
    value = parse_quantity(resource, text)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    "resource, text, message",
    [
        ("cpu", "2Gi", "not a number of cores"),
        ("memory", "3Qi", "unknown unit"),
        ("nvidia.com/gpu", "1.5", "whole number"),
        ("cpu", "lots", "not an amount"),
    ],
)
def test_parse_quantity_refuses(resource, text, message):
    with pytest.raises(ValueError, match=message):
        parse_quantity(resource, text)


def test_parse_resources():
    assert parse_resources("cpu=8,memory=16Gi, nvidia.com/gpu=2") == {
        "cpu": 8.0,
        "memory": 16 * GiB,
        "nvidia.com/gpu": 2,
    }
    assert parse_resources("") == {}
    with pytest.raises(ValueError, match="resource=amount"):
        parse_resources("cpu")


@pytest.mark.parametrize(
    "resource, value, text",
    [
        ("memory", 2 * GiB, "2 GiB"),
        ("memory", 1536 * 2**20, "1.5 GiB"),
        ("memory", 512 * 2**20, "512 MiB"),
        ("memory", 100, "100 B"),
        ("memory", 0, "0 B"),
        ("cpu", 1.5, "1.5"),
        ("cpu", 8.0, "8"),
        ("cpu", 0.25, "0.25"),
        ("nvidia.com/gpu", 2, "2"),
        ("cpu", None, "-"),
    ],
)
def test_format_amount(resource, value, text):
    assert format_amount(resource, value) == text


def test_format_resources():
    assert format_resources({"cpu": 8.0, "memory": 16 * GiB}) == "cpu=8, memory=16 GiB"
    assert format_resources({}) == "-"
