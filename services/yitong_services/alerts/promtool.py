"""An admin's PromQL checked by ``promtool check rules`` (Prometheus's own parser) before it is stored."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import yaml
from anyio import to_thread

from .processes import find


def _candidate(workdir: Path, expr: str) -> str:
    """A rule file holding one rule with ``expr`` (the caller removes it)."""
    workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    rules = {"groups": [{"name": "check", "rules": [{"alert": "check", "expr": expr}]}]}
    fd, path = tempfile.mkstemp(suffix=".yml", dir=workdir)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(rules, f)
    return path


async def check_expression(expr: str, workdir: Path, promtool: str = "promtool") -> str | None:
    """None when promtool accepts ``expr`` (or is not installed: the quick syntax check stands then),
    else promtool's complaint as one sentence."""
    exe = find(promtool)
    if exe is None:
        return None
    path = await to_thread.run_sync(_candidate, workdir, expr)
    try:
        proc = await asyncio.create_subprocess_exec(
            exe,
            "check",
            "rules",
            path,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return "promtool took too long to check the expression"
    finally:
        await to_thread.run_sync(os.unlink, path)
    if proc.returncode == 0:
        return None
    lines = [ln.strip() for ln in out.decode(errors="replace").splitlines() if ln.strip()]
    problem = next((ln for ln in lines if "parse" in ln.lower() or "error" in ln.lower()), lines[-1] if lines else "")
    problem = problem.rpartition("could not parse expression: ")[2].replace(path, "the rule")
    return f"Prometheus cannot parse the expression: {problem[:400]}"
