"""``log_metrics``: a job reports its metrics into its run's ledger record.

>>> import yitong_lab
>>> yitong_lab.log_metrics(loss=0.12, accuracy=0.97)      # doctest: +SKIP
>>> yitong_lab.log_metrics({"val/loss": 0.2, "epoch": 3})  # doctest: +SKIP

Inside a job (the platform sets ``YITONG_JOB_TOKEN``, ``YITONG_API_URL`` and ``YITONG_JOB_ID``)
each call POSTs the values to ``$YITONG_API_URL/jobs/$YITONG_JOB_ID/metrics`` with the job's
own token; they are merged into the current attempt's record (a later value of a name replaces
the earlier one). Outside a job the call does nothing and warns once (:class:`NotInAJob`), so
the same script runs in a notebook. Inside a job a refusal or an unreachable service raises
:class:`~yitong_lab.client.YitongError` (after three tries for connection failures).

Values must be JSON: numbers, strings, booleans, lists, maps; numpy and torch scalars and
arrays are converted (``.item()`` / ``.tolist()``); NaN and infinities become the strings
``"NaN"``, ``"Infinity"``, ``"-Infinity"``. In a multi-process job call it from one rank.
Only the standard library is used (no httpx), so importing it costs nothing.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from typing import Any

ENV = ("YITONG_API_URL", "YITONG_JOB_ID", "YITONG_JOB_TOKEN")


class NotInAJob(UserWarning):
    """``log_metrics`` was called outside a Yitong job: the values were not recorded."""


_warned = False


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (see module doc); ``TypeError`` names what cannot be."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    for method in ("item", "tolist"):  # numpy / torch scalars, then arrays and tensors
        convert = getattr(value, method, None)
        if callable(convert):
            try:
                return jsonable(convert())
            except (TypeError, ValueError, RuntimeError):
                continue
    raise TypeError(f"metric value {value!r} ({type(value).__name__}) is not a number, string, list or map")


def log_metrics(metrics: dict[str, Any] | None = None, /, **more: Any) -> dict[str, Any] | None:
    """Record ``metrics`` (a dict and/or keywords) in this job's run; returns
    ``{"run": id, "metrics": all metrics so far}``, or ``None`` outside a job."""
    global _warned
    values = {**(metrics or {}), **more}
    if not values:
        raise ValueError("log_metrics needs at least one metric, e.g. log_metrics(loss=0.1)")
    body = jsonable(values)
    api, job_id, token = (os.environ.get(name, "") for name in ENV)
    if not (api and job_id and token):
        if not _warned:
            _warned = True
            warnings.warn(
                "yitong_lab.log_metrics: not running inside a Yitong job (YITONG_JOB_TOKEN is "
                "not set), so the metrics are not recorded",
                NotInAJob,
                stacklevel=2,
            )
        return None
    return _post(f"{api.rstrip('/')}/jobs/{job_id}/metrics", token, json.dumps(body).encode())


def _post(url: str, token: str, data: bytes, tries: int = 3) -> dict[str, Any]:
    import urllib.error
    import urllib.request

    from yitong_lab.client import YitongError, error_detail

    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json", "Accept": "application/json"},
    )
    for attempt in range(tries):
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            if error.code >= 500 and attempt + 1 < tries:
                time.sleep(2**attempt)
                continue
            try:
                body = json.loads(error.read() or b"null")
            except ValueError:
                body = None
            raise YitongError(error.code, error_detail(body, error.code)) from None
        except (urllib.error.URLError, OSError) as error:
            if attempt + 1 < tries:
                time.sleep(2**attempt)
                continue
            reason = getattr(error, "reason", error)
            raise YitongError(0, f"cannot reach the platform API at {url}: {reason}") from None
    raise AssertionError("unreachable")  # pragma: no cover
