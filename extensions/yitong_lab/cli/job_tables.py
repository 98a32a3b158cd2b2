"""Text of the ``yt job`` and ``yt run`` commands: pure builders from the API's models to strings."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from yitong_lab.cli.output import fields, table
from yitong_lab.units import format_amount, format_number, format_time, parse_time


def when(text: str | None) -> datetime | None:
    return parse_time(text)


def age(created: str | None, now: datetime | None = None) -> str:
    """``42s``, ``5m``, ``3h``, ``2d`` since ``created`` (ISO 8601)."""
    start = when(created)
    if start is None:
        return "-"
    seconds = max(0, int(((now or datetime.now(UTC)) - start).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def duration(start: str | None, end: str | None) -> str:
    a, b = when(start), when(end)
    if a is None or b is None:
        return "-"
    seconds = int((b - a).total_seconds())
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def wait_or_reason(job: dict[str, Any]) -> str:
    """Queued: ``#2 waiting: ...``; ended: the reason or the exit code; running: ``-``."""
    if job["state"] == "queued":
        pos = f"#{job['position']} " if job.get("position") else ""
        return f"{pos}{job.get('reason') or ''}".strip() or "-"
    if job["state"] in ("failed", "cancelled", "preempted"):
        reason = job.get("reason") or ""
        code = job.get("exit_code")
        if code is not None and f"exit code {code}" not in reason:
            reason = f"exit code {code}" + (f"; {reason}" if reason else "")
        return reason or "-"
    return job.get("reason") or "-"


def jobs_table(jobs: list[dict[str, Any]], now: datetime | None = None) -> str:
    rows = [
        [
            str(j["id"]),
            j.get("name") or "-",
            j.get("vc") or "-",
            j.get("user") or "-",
            j["state"],
            wait_or_reason(j),
            age(j.get("created"), now),
        ]
        for j in jobs
    ]
    return table(["ID", "NAME", "VC", "USER", "STATE", "POSITION/REASON", "AGE"], rows)


def command_text(command: Any) -> str:
    if isinstance(command, list):
        import shlex

        return shlex.join(str(c) for c in command)
    return f"bash -c {json.dumps(command)}" if command else "-"


def shape(spec: dict[str, Any]) -> str:
    """``2 nodes x (16 cpu, 64Gi, nvidia.com/gpu x4), 4 procs/node, pytorch``."""
    acc = spec.get("accelerator")
    memory = spec.get("memory", "2Gi")
    memory = format_amount("memory", memory) if isinstance(memory, int | float) else str(memory)
    per_node = [f"{format_number(spec.get('cpu', 1))} cpu", memory]
    if acc:
        per_node.append(f"{acc.get('type')} x{acc.get('count')}")
    text = f"{spec.get('nodes', 1)} node{'s' if spec.get('nodes', 1) != 1 else ''} x ({', '.join(per_node)})"
    if spec.get("procs_per_node"):
        text += f", {spec['procs_per_node']} procs/node"
    return text + f", {spec.get('framework') or 'plain'}"


def code_text(code: dict[str, Any] | None) -> str:
    code = code or {}
    if not any(code.get(k) for k in ("commit", "dirty_hash", "path")):
        return "-"
    commit = f"commit {code['commit']}" if code.get("commit") else "no commit"
    dirty = f", uncommitted changes {code['dirty_hash']}" if code.get("dirty_hash") else ", clean"
    if not code.get("commit") and code.get("dirty_hash"):
        dirty = f", files {code['dirty_hash']}"
    return commit + dirty + (f" in {code['path']}" if code.get("path") else "")


def devices_text(devices: dict[str, Any] | None) -> str:
    if not devices:
        return "-"
    kind, count, visible = devices.get("type"), devices.get("count"), devices.get("visible")
    if kind is None and not count:
        return "none" if visible in (None, []) else f"visible {visible}"
    return f"{kind} x{count}" + (f" (visible {','.join(str(v) for v in visible)})" if visible else "")


def ports_text(ports: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((ports or {}).items())) or "-"


def inputs_rows(inputs: list[dict[str, Any]] | None) -> list[list[str]]:
    return [
        [
            i.get("dataset") or "-",
            i.get("mount") or "-",
            f"v{i['version']}" if i.get("version") else "-",
            (i.get("manifest") or "-")[:16],
        ]
        for i in inputs or []
    ]


def job_details(job: dict[str, Any]) -> str:
    spec = job.get("spec") or {}
    ranks = job.get("ranks") or []
    pairs = [
        ("job", f"{job['id']} ({job.get('name')})"),
        ("vc", job.get("vc") or "-"),
        ("user", job.get("user") or "-"),
        ("state", job["state"] + (f" (exit code {job['exit_code']})" if job.get("exit_code") is not None else "")),
        ("reason", wait_or_reason(job)),
        ("created", format_time(job.get("created"))),
        ("started", format_time(job.get("started"))),
        ("finished", format_time(job.get("finished"))),
        ("attempts", str(job.get("attempts", 0))),
        ("backend", job.get("backend") or "-"),
        ("command", command_text(spec.get("command"))),
        ("resources", shape(spec) if spec else "-"),
        ("code", code_text(job.get("code"))),
        ("hosts", ", ".join(job.get("hosts") or []) or "-"),
        ("ports", ports_text(job.get("ports"))),
        ("devices", devices_text(job.get("devices"))),
        ("access", job.get("access") or "-"),
        ("outputs", job.get("outputs_path") or spec.get("outputs") or "-"),
        ("runs", ", ".join(str(r) for r in job.get("runs") or []) or "-"),
        ("ranks", (", ".join(str(r) for r in ranks) + f"  (yt job logs {job['id']} --rank N)") if ranks else "-"),
    ]
    if job.get("priority"):
        pairs.insert(5, ("priority", str(job["priority"])))
    text = fields(pairs)
    rows = inputs_rows(job.get("inputs"))
    if rows:
        text += "\n\n" + table(["INPUT", "MOUNT", "VERSION", "MANIFEST"], rows)
    return text


def submitted_text(job: dict[str, Any]) -> str:
    lines = [
        f"submitted job {job['id']} ({job.get('name')}) in VC {job.get('vc')}: {job['state']}"
        + (f", {wait_or_reason(job)}" if job["state"] == "queued" and wait_or_reason(job) != "-" else "")
    ]
    lines += [f"note: {note}" for note in job.get("notes") or []]
    return "\n".join(lines)


def preview_text(preview: dict[str, Any]) -> str:
    """``yt job submit --dry-run``: the spec as YAML, what it holds, why a submit would be refused, then every note."""
    import yaml

    spec = yaml.safe_dump(preview["spec"], sort_keys=False, allow_unicode=True, width=100).rstrip()
    holds = ", ".join(f"{format_amount(k, v)} {k}" for k, v in preview.get("resources", {}).items())
    lines = [spec, "", f"holds: {holds}" if holds else "holds: nothing", "nothing was submitted (--dry-run)"]
    if preview.get("refused"):
        lines.append(f"would be refused: {preview['refused']}")
    lines += [f"note: {note}" for note in preview.get("notes") or []]
    return "\n".join(lines)


def value_text(value: Any, name: str = "") -> str:
    if name == "memory" and isinstance(value, int) and not isinstance(value, bool):
        return format_amount("memory", value)
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return "-" if value is None else str(value)


def environment_text(env: dict[str, Any] | None) -> str:
    env = env or {}
    parts = []
    if env.get("image"):
        parts.append(f"image {env['image']}" + (f" ({env['digest']})" if env.get("digest") else ""))
    if env.get("kernel"):
        parts.append(f"kernel {env['kernel']}")
    if env.get("python_version"):
        parts.append(f"python {env['python_version']}" + (f" ({env['python']})" if env.get("python") else ""))
    if env.get("pip_freeze_sha256"):
        parts.append(f"{env.get('packages', '?')} packages, pip freeze sha256 {env['pip_freeze_sha256'][:16]}")
    return "; ".join(parts) or "-"


def machine_text(devices: dict[str, Any] | None) -> str:
    d = devices or {}
    acc = d.get("accelerator")
    parts = [f"{acc.get('type')} x{acc.get('count')}" if acc else "no accelerator"]
    if d.get("visible"):
        parts.append(f"visible {','.join(str(v) for v in d['visible'])}")
    if d.get("driver"):
        parts.append(f"driver {d['driver']}")
    parts += [str(d[k]) for k in ("host", "cpu_model", "machine") if d.get(k)]
    if d.get("kernel"):
        parts.append(f"kernel {d['kernel']}")
    return "; ".join(parts)


def run_details(run: dict[str, Any]) -> str:
    state = run.get("state") or "-"
    if run.get("exit_code") is not None:
        state += f" (exit code {run['exit_code']})"
    head = fields(
        [
            ("run", f"{run['run']} (job {run.get('job')} {run.get('name')}, attempt {run.get('attempt')})"),
            ("vc", run.get("vc") or "-"),
            ("user", run.get("user") or "-"),
            ("state", state),
            ("started", format_time(run.get("started"))),
            ("finished", format_time(run.get("finished"))),
            ("duration", duration(run.get("started"), run.get("finished"))),
            ("backend", run.get("backend") or "-"),
            ("code", code_text(run.get("code"))),
            ("environment", environment_text(run.get("environment"))),
            ("devices", machine_text(run.get("devices"))),
        ]
    )
    blocks = [head]
    rows = inputs_rows(run.get("inputs"))
    blocks.append(table(["DATASET", "MOUNT", "VERSION", "MANIFEST"], rows) if rows else "datasets:  none")
    params = run.get("parameters") or {}
    rows = [
        [k, command_text(v) if k == "command" else value_text(v, k)]
        for k, v in params.items()
        if v not in (None, {}, [])
    ]
    if rows:
        blocks.append(table(["PARAMETER", "VALUE"], rows))
    metrics = run.get("metrics") or {}
    blocks.append(
        table(["METRIC", "VALUE"], [[k, value_text(v)] for k, v in sorted(metrics.items())])
        if metrics
        else "metrics:   none (a job records them with yitong_lab.log_metrics)"
    )
    artifacts = run.get("artifacts") or []
    blocks.append(
        table(
            ["ARTIFACT", "SIZE", "BLAKE3"],
            [[a["path"], format_amount("memory", a.get("size")), (a.get("blake3") or "-")[:16]] for a in artifacts],
        )
        if artifacts
        else "artifacts: none"
    )
    return "\n\n".join(blocks)
