"""Formatting what the API returns (pure functions); parsing amounts is the service's."""

import pytest

from yitong_lab.units import format_amount, format_resources

GiB = 2**30


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
