"""``yitong-service slurm-accounts [--apply]``: the ``sacctmgr`` commands that give each VC a Slurm
account and a QOS limited to the VC's quota (``GrpTRES``). Printed one per line (shell-quoted),
or run in order with ``--apply``. VCs come from the service's database (what it enforces, VCs
made over REST included), else from the settings file. Slurm enforces them only with slurmdbd
and ``AccountingStorageEnforce=associations,limits,qos``; then set ``backends.slurm.qos``.
"""

from __future__ import annotations

import argparse
import getpass
import shlex
import subprocess
import sys
from pathlib import Path

from ..core.settings import Settings, SettingsError, load_settings
from ..vcs.quantities import Resources
from .runner_slurm import SlurmSettings
from .slurm import sacctmgr_commands


def vc_quotas(settings: Settings) -> dict[str, Resources]:
    """``{vc: quota}`` from the database when it has VCs, else from the settings file."""
    from sqlalchemy import select
    from sqlalchemy.exc import SQLAlchemyError

    from ..core.db import Database
    from ..vcs.models import VC

    url = settings.database_url
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return {name: dict(vc.quota) for name, vc in settings.vcs.items()}  # never started: no database yet
    db = Database(url)
    try:
        with db.session() as s:
            found = {vc.name: dict(vc.quota) for vc in s.scalars(select(VC))}
    except SQLAlchemyError:
        found = {}
    finally:
        db.dispose()
    return found or {name: dict(vc.quota) for name, vc in settings.vcs.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="yitong-service slurm-accounts", description=__doc__.splitlines()[0])
    p.add_argument("--settings", help="settings YAML (default: $YITONG_SETTINGS or ./yitong.example.yaml)")
    p.add_argument("--data-dir", help="data directory (default: $YITONG_DATA_DIR or ./.yitong)")
    p.add_argument(
        "--user",
        action="append",
        help="Slurm user allowed to submit under each account "
        "(repeatable; default: the user running this, i.e. the service's)",
    )
    p.add_argument("--apply", action="store_true", help="run the commands instead of printing them")
    args = p.parse_args(argv)
    try:
        settings = load_settings(args.settings, args.data_dir)
        config = SlurmSettings.of(settings)
    except (SettingsError, ValueError) as e:
        print(f"yitong-service slurm-accounts: {e}", file=sys.stderr)
        return 2
    commands = sacctmgr_commands(
        vc_quotas(settings),
        args.user or [getpass.getuser()],
        account=config.account or "{vc}",
        qos=config.qos or "yt-{vc}",
        devices=settings.devices,
    )
    if not config.qos:
        print("# then set backends.slurm.qos: 'yt-{vc}' so jobs ask for their VC's QOS", file=sys.stderr)
    failed = 0
    for argv_ in commands:
        if not args.apply:
            print(shlex.join(argv_))
            continue
        done = subprocess.run(argv_, capture_output=True, text=True, timeout=120)
        text = (done.stdout + done.stderr).strip()
        print(f"$ {shlex.join(argv_)}\n{text}" if text else f"$ {shlex.join(argv_)}")
        # "add" of something that exists answers "Nothing new added" (not an error for us)
        if done.returncode != 0 and "Nothing new added" not in text and "already exists" not in text:
            failed += 1
    return 1 if failed else 0
