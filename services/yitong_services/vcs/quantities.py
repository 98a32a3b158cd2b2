"""Resource names and amounts: parse Kubernetes-style quantities, format them back.

``cpu`` is cores (float; ``500m`` = 0.5), ``memory`` is bytes (int; ``2Gi``, ``512M``), any
``vendor/device`` name (``nvidia.com/gpu``, ``huawei.com/Ascend910``) is an integer count.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

Amount = float | int
Resources = dict[str, Amount]

RESOURCE_RE = re.compile(
    r"^(cpu|memory|[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)$"
)
_QUANTITY_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")
_SUFFIX: dict[str, Decimal | int] = {
    "": 1,
    "m": Decimal("0.001"),
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
}
_BINARY = [("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)]


def check_resource_name(name: str) -> str:
    """Return ``name`` or raise ValueError with a sentence saying what is wrong."""
    if not isinstance(name, str) or not RESOURCE_RE.match(name):
        raise ValueError(f"unknown resource {name!r}: use cpu, memory or a device name like nvidia.com/gpu")
    return name


def _decimal(value: object, resource: str) -> Decimal:
    if isinstance(value, bool):
        raise ValueError(f"{resource}: {value!r} is not an amount")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{resource}: {value!r} is not an amount")
        return Decimal(str(value))
    if not isinstance(value, str):
        raise ValueError(f"{resource}: {value!r} is not an amount")
    match = _QUANTITY_RE.match(value)
    if not match or match.group(2) not in _SUFFIX:
        raise ValueError(f"{resource}: {value!r} is not a quantity (examples: 2, 0.5, 500m, 2Gi, 512M)")
    try:
        return Decimal(match.group(1)) * _SUFFIX[match.group(2)]
    except InvalidOperation as e:  # pragma: no cover - the regexp already rules this out
        raise ValueError(f"{resource}: {value!r} is not a quantity") from e


MAX_AMOUNT = 2**63 - 1  # what a database integer holds: larger amounts are refused, never overflow


def parse_amount(resource: str, value: object) -> Amount:
    """``parse_amount("memory", "2Gi") == 2147483648``; negative amounts are refused."""
    check_resource_name(resource)
    number = _decimal(value, resource)
    if number < 0:
        raise ValueError(f"{resource}: negative amount {value!r}")
    if number > MAX_AMOUNT:
        raise ValueError(f"{resource}: {value!r} is more than any machine has (at most {MAX_AMOUNT})")
    if resource == "cpu":
        return float(number)
    if number != number.to_integral_value():
        unit = "bytes" if resource == "memory" else "devices"
        raise ValueError(f"{resource}: {value!r} is not a whole number of {unit}")
    return int(number)


def parse_bytes(value: object, what: str = "storage_quota") -> int | None:
    """A byte count as people type it (``500Gi``, ``2T``, ``1048576``); None stays None."""
    if value is None:
        return None
    number = _decimal(value, what)
    if number < 0 or number > MAX_AMOUNT or number != number.to_integral_value():
        raise ValueError(f"{what}: {value!r} is not a whole number of bytes from 0 to {MAX_AMOUNT}")
    return int(number)


def human_bytes(amount: int) -> str:
    """Bytes for messages: ``approx_amount("memory", ...)`` (``1.5Gi``, ``900Mi``, ``12``)."""
    return approx_amount("memory", amount)


def parse_resources(values: dict | None) -> Resources:
    """Validate and normalise a ``resource -> amount`` map."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ValueError(f"expected a map of resource -> amount, got {values!r}")
    return {name: parse_amount(name, amount) for name, amount in values.items()}


def format_amount(resource: str, amount: Amount) -> str:
    """The inverse for people: ``format_amount("memory", 2**31) == "2Gi"``, cpu ``0.5 -> "500m"``."""
    if resource == "memory":
        amount = int(amount)
        for suffix, factor in _BINARY:
            if amount and amount % factor == 0:
                return f"{amount // factor}{suffix}"
        return str(amount)
    if resource == "cpu":
        amount = float(amount)
        if amount.is_integer():
            return str(int(amount))
        millis = amount * 1000
        if abs(millis - round(millis)) < 1e-9:
            return f"{round(millis)}m"
        return str(amount)
    return str(int(amount))


def human_amount(resource: str, amount: Amount) -> str:
    """For messages: like :func:`format_amount`, but cpu as a plain decimal (``14.5``, not ``14500m``)."""
    if resource == "cpu":
        return f"{round(float(amount), 3):g}"
    return format_amount(resource, amount)


def approx_amount(resource: str, amount: Amount) -> str:
    """For tables of measured amounts: memory in the largest binary unit, 3 significant digits
    (``25276510208 -> "23.5Gi"``, ``0 -> "0"``); others as :func:`human_amount`. Exact values
    (quotas, form fields) use :func:`format_amount`, which parses back."""
    if resource != "memory":
        return human_amount(resource, amount)
    value = float(amount)
    for suffix, factor in _BINARY:
        if value >= factor:
            return f"{value / factor:.3g}{suffix}"
    return str(int(value))


def describe(resources: Resources) -> str:
    """The one way people see resources: ``{"cpu": 0.5, "memory": 2**30}`` -> "0.5 cpu, 1Gi memory"."""
    return ", ".join(f"{human_amount(name, amount)} {name}" for name, amount in resources.items()) or "nothing"


def add(a: Resources, b: Resources) -> Resources:
    out = dict(a)
    for name, amount in b.items():
        out[name] = tidy(name, out.get(name, 0) + amount)
    return out


def tidy(resource: str, amount: float) -> Amount:
    """cpu stays float (rounded to millicores), everything else int."""
    if resource == "cpu":
        return round(float(amount), 3)
    return int(round(amount))
