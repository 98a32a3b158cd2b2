"""Amounts, times and numbers for people: format what the API returns (the ``yt`` tables and
lines; ``--json`` prints the API's values unchanged).

The API speaks numbers (``cpu`` float cores, ``memory`` int bytes, devices int counts) and
accepts the quantities people type (``16Gi``, ``500m``) as they are: the platform service parses
them (``yitong_services.vcs.quantities``, the one parser) and refuses a bad one with a sentence.
Pure functions, stdlib only (the SDK and the magics import this).
"""

from __future__ import annotations

from datetime import UTC, datetime

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


def format_bytes(value: int | float | None) -> str:
    """Bytes as memory is shown: ``2147483648 -> "2 GiB"`` (``-`` when unknown)."""
    return format_amount("memory", value)


def format_number(value: object) -> str:
    """A measured number to 4 significant digits (``0.8765432101234567 -> "0.8765"``,
    ``12345.678 -> "1.235e+04"``); integers and non-numbers as they are."""
    if isinstance(value, bool) or not isinstance(value, float):
        return "-" if value is None else str(value)
    return f"{value:.4g}"


def parse_time(text: object) -> datetime | None:
    """An API timestamp (ISO 8601; without a zone it is UTC), or None."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def ago(moment: datetime, now: datetime | None = None) -> str:
    """``just now``, ``3 min ago``, ``5 h ago``, ``2 days ago``; ``in 4 min`` ahead."""
    seconds = int(((now or datetime.now(UTC)) - moment).total_seconds())
    ahead, seconds = seconds < 0, abs(seconds)
    if seconds < 60:
        return "just now" if not ahead else "in under a minute"
    for size, unit in ((86400, "day"), (3600, "h"), (60, "min")):
        if seconds >= size:
            n = seconds // size
            text = f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''}"
            return f"in {text}" if ahead else f"{text} ago"
    return ""  # unreachable


def format_time(text: object, now: datetime | None = None) -> str:
    """An API timestamp in the local zone to the minute, with how long ago within a week:
    ``"2026-11-28T04:55:02.849982Z" -> "2026-11-28 04:55 (3 min ago)"``; ``-`` when there is
    none; a text that is not a time as it is."""
    moment = parse_time(text)
    if moment is None:
        return "-" if not text else str(text)
    local = moment.astimezone().strftime("%Y-%m-%d %H:%M")
    if abs(((now or datetime.now(UTC)) - moment).total_seconds()) < 7 * 86400:
        return f"{local} ({ago(moment, now)})"
    return local
