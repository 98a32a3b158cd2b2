"""``yitong-service node-report``: a node's agent, for Slurm and Kubernetes nodes (and any
machine that should show on the dashboard): every ``--every`` seconds it posts this machine's
capacity, use and the health of the services named with ``--probe`` to ``POST /nodes/report``.

Per-device use (each GPU's utilisation, memory and compute processes) is read through NVML
(``nvidia-ml-py``); where NVML does not start (no driver, no GPU) the report says
``devices: null`` and why, never zeros. The accelerator reclaim matches a server's device
indices to these figures (ops/usage.py).

    yitong-service node-report --api http://hub:8000/services/yitong/api/v1 \\
        --token-file /etc/yitong/node-token --probe slurmd=http://127.0.0.1:6818 --every 30

The token is the platform's service token or an admin's (``--token-file``, else ``$YT_TOKEN``).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from ..alerts.nvml import NVML
from ..vcs.inventory import detect_local
from ..vcs.quantities import parse_resources
from .nodes import local_usage
from .usage import GPU, read_devices


def probe(url: str, timeout: float) -> dict[str, Any]:
    try:
        r = httpx.get(url, timeout=timeout)
    except httpx.HTTPError as e:
        return {"ok": False, "detail": f"{type(e).__name__} at {url}"}
    return {"ok": r.status_code < 400, "detail": "" if r.status_code < 400 else f"HTTP {r.status_code} at {url}"}


def build_report(
    name: str, source: str, allocatable: dict, probes: dict[str, str], timeout: float, nvml: NVML | None = None
) -> dict[str, Any]:
    devices, note = read_devices(nvml or NVML())
    used = local_usage({r: a for r, a in allocatable.items() if r != GPU})
    if devices is not None and GPU in allocatable:
        used[GPU] = round(sum(d["utilization"] for d in devices), 3)
    return {
        "name": name,
        "source": source,
        "allocatable": allocatable,
        "used": {r: a for r, a in used.items() if a is not None},
        "services": [{"name": n, **probe(url, timeout)} for n, url in probes.items()],
        "devices": devices,
        "devices_note": note,
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="yitong-service node-report", description=__doc__)
    p.add_argument("--api", required=True, help="the platform API base, .../services/yitong/api/v1")
    p.add_argument("--token-file", help="file holding the token (default: $YT_TOKEN)")
    p.add_argument("--name", default=socket.gethostname(), help="the node's name (default: host name)")
    p.add_argument("--source", default="agent", help="shown beside the name: slurm, kubernetes, ...")
    p.add_argument("--device", action="append", default=[], metavar="TYPE=COUNT", help="e.g. nvidia.com/gpu=8")
    p.add_argument("--probe", action="append", default=[], metavar="NAME=URL", help="a service of this node")
    p.add_argument("--every", type=float, default=0, help="seconds between reports (0: once)")
    p.add_argument("--timeout", type=float, default=2.0)
    return p.parse_args(argv)


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise SystemExit(f"yitong-service node-report: {what} {item!r}: expected NAME=VALUE")
        out[key] = value
    return out


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    token = Path(args.token_file).read_text().strip() if args.token_file else os.environ.get("YT_TOKEN", "")
    if not token:
        print("yitong-service node-report: no token: pass --token-file or set YT_TOKEN", file=sys.stderr)
        return 2
    try:
        devices = parse_resources(_pairs(args.device, "--device"))
    except ValueError as e:
        print(f"yitong-service node-report: {e}", file=sys.stderr)
        return 2
    allocatable = detect_local() | devices
    probes = _pairs(args.probe, "--probe")
    headers = {"Authorization": f"token {token}"}
    nvml = NVML()  # started once, on the first report
    while True:
        report = build_report(args.name, args.source, allocatable, probes, args.timeout, nvml)
        try:
            r = httpx.post(args.api.rstrip("/") + "/nodes/report", json=report, headers=headers, timeout=10)
            if r.status_code != 204:
                print(f"yitong-service node-report: {r.status_code} {r.text[:300]}", file=sys.stderr)
                if not args.every:
                    return 1
        except httpx.HTTPError as e:
            print(f"yitong-service node-report: {e}", file=sys.stderr)
            if not args.every:
                return 1
        if not args.every:
            return 0
        time.sleep(args.every)
