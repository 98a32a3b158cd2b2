"""Shared test helpers for every Yitong distribution (`from helpers import require, free_port`).

Fixtures and helpers:

- ``require(what, ok, why)``: skip a test when a system service (Slurm, PostgreSQL, Chromium)
  is missing on a developer's machine, but *fail* it under CI (``CI=true``) or when
  ``YITONG_REQUIRE_ALL=1``: a run that skips what it cannot reach is not a pass.
- ``free_port()``: an unused TCP port on 127.0.0.1.
"""

from __future__ import annotations

import os
import socket

import pytest


def strict() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"} or os.environ.get(
        "YITONG_REQUIRE_ALL"
    ) == "1"


def require(what: str, ok: bool, why: str = "") -> None:
    """Skip (developer machine) or fail (CI) when a needed system service is absent."""
    if ok:
        return
    message = f"{what} is not available{': ' + why if why else ''}"
    if strict():
        pytest.fail(message + " (CI must provide it: see .ci/run)", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
