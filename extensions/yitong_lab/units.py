"""Resource amounts for people: format what the API returns.

The API speaks numbers (``cpu`` float cores, ``memory`` int bytes, devices int counts) and
accepts the quantities people type (``16Gi``, ``500m``) as they are: the platform service parses
them (``yitong_services.vcs.quantities``, the one parser) and refuses a bad one with a sentence.
Pure functions, stdlib only (the SDK and the magics import this).
"""

from __future__ import annotations

_MEMORY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _number(value: float) -> str:
    """Up to two decimals, no trailing zeros: 1.0 -> '1', 1.5 -> '1.5', 0.25 -> '0.25'."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_amount(resource: str, value: int | float | None) -> str:
    """Human text for one amount: memory in binary units, cpu as cores, devices as counts.

    >>> format_amount("memory", 2147483648)
    '2 GiB'
    >>> format_amount("cpu", 1.5)
    '1.5'
    """
    if value is None:
        return "-"
    if resource == "memory":
        amount, unit = float(value), 0
        while abs(amount) >= 1024 and unit < len(_MEMORY_UNITS) - 1:
            amount, unit = amount / 1024, unit + 1
        return f"{_number(amount)} {_MEMORY_UNITS[unit]}"
    return _number(float(value))


def format_resources(resources: dict[str, int | float] | None) -> str:
    """``{"cpu": 8.0, "memory": 2**34}`` -> ``"cpu=8, memory=16 GiB"`` (``-`` when empty)."""
    if not resources:
        return "-"
    return ", ".join(f"{name}={format_amount(name, value)}" for name, value in resources.items())
