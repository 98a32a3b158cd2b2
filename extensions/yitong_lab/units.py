"""Resource amounts: parse what people type, format what the API returns.

The API speaks numbers (``cpu`` float cores, ``memory`` int bytes, devices int counts);
people type Kubernetes quantities (``16Gi``, ``500m``) and read ``2 GiB``, ``1.5``.
Pure functions, stdlib only (the SDK and the magics import this).
"""

from __future__ import annotations

import re

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")
_MEMORY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def parse_quantity(resource: str, text: str | int | float) -> int | float:
    """Turn ``"16Gi"`` (memory), ``"500m"``/``"1.5"`` (cpu) or ``"2"`` (devices) into a number.

    >>> parse_quantity("memory", "2Gi")
    2147483648
    >>> parse_quantity("cpu", "500m")
    0.5
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value: float = float(text)
        suffix = ""
    else:
        match = _QUANTITY.match(str(text))
        if not match:
            raise ValueError(f"{resource}: {text!r} is not an amount (examples: 8, 1.5, 16Gi, 500m)")
        value, suffix = float(match.group(1)), match.group(2)
    if resource == "cpu":
        if suffix not in ("", "m"):
            raise ValueError(f"cpu: {text!r} is not a number of cores (examples: 2, 1.5, 500m)")
        return value / 1000 if suffix == "m" else value
    if resource == "memory":
        factor = _BINARY.get(suffix) or _DECIMAL.get(suffix) or (1 if suffix in ("", "B") else None)
        if factor is None:
            raise ValueError(f"memory: unknown unit {suffix!r} in {text!r} (use Ki, Mi, Gi, Ti, k, M, G)")
        return int(value * factor)
    if suffix or value != int(value):
        raise ValueError(f"{resource}: {text!r} is not a whole number of devices")
    return int(value)


def parse_resources(text: str) -> dict[str, int | float]:
    """``"cpu=8,memory=16Gi,nvidia.com/gpu=2"`` -> ``{"cpu": 8.0, "memory": 17179869184, ...}``."""
    out: dict[str, int | float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, amount = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{item!r} is not resource=amount (example: cpu=8,memory=16Gi)")
        out[name.strip()] = parse_quantity(name.strip(), amount)
    return out


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
