"""Write helm/yitong/files/alert-kinds.json: the alert rule kinds of the platform service
(``alerts.kinds.KINDS``: summary, threshold unit and bounds, PromQL template) for the chart's
PrometheusRule (templates/monitoring/prometheusrule.yaml), which fills in the same placeholders
as ``kinds.expression`` and builds each rule as ``config.rule_entry`` does.

    .venv/bin/python helm/alert_kinds.py           # write it
    .venv/bin/python helm/alert_kinds.py --check   # exit 1 when the file is stale (tests/helm runs this)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS_FILE = ROOT / "helm" / "yitong" / "files" / "alert-kinds.json"


def text() -> str:
    from yitong_services.alerts.kinds import KINDS

    table = {name: dataclasses.asdict(kind) for name, kind in KINDS.items()}
    return json.dumps(table, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    new = text()
    if "--check" in argv:
        if not KINDS_FILE.exists() or KINDS_FILE.read_text() != new:
            print(f"{KINDS_FILE.relative_to(ROOT)} is stale: run .venv/bin/python helm/alert_kinds.py", file=sys.stderr)
            return 1
        return 0
    tmp = KINDS_FILE.with_suffix(".tmp")
    tmp.write_text(new)
    tmp.replace(KINDS_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
