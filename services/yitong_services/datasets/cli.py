"""``yitong-service verify``: rehash the dataset store and the materialise cache on this host.

The same check as ``POST /storage/verify`` (``verify.py``), run by the platform's account
without a hub token: every stored object (loose and in packs), every version's manifest and
every cached object is read and hashed again. Prints the report (``--json`` as JSON); exit 1
when anything is corrupt, missing or changed.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="yitong-service verify", description=__doc__.split("\n\n")[0])
    p.add_argument("--settings", help="settings YAML (default: $YITONG_SETTINGS or ./yitong.example.yaml)")
    p.add_argument("--data-dir", help="data directory (default: $YITONG_DATA_DIR or ./.yitong)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)

    from ..core.db import Database
    from ..core.settings import SettingsError, load_settings
    from .storage import Storage
    from .verify import verify

    try:
        settings = load_settings(args.settings, args.data_dir)
    except SettingsError as e:
        print(f"yitong-service verify: {e}", file=sys.stderr)
        return 2
    db = Database(settings.database_url)
    try:
        db.upgrade()
        report = verify(Storage(settings, db))
    finally:
        db.dispose()
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(text(report))
    return 1 if report["corrupt"] or report["missing"] or report["cache_corrupt"] else 0


def text(report: dict) -> str:
    counts = (
        f"{len(report['corrupt'])} corrupt, {len(report['missing'])} missing, "
        f"{len(report['cache_corrupt'])} changed in the materialise cache"
    )
    lines = [f"checked {report['checked']} objects and manifests: {counts}"]
    lines += [f"corrupt  {h}" for h in report["corrupt"]]
    lines += [f"missing  {h}" for h in report["missing"]]
    lines += [f"changed  {h} (materialise cache)" for h in report["cache_corrupt"]]
    return "\n".join(lines)
