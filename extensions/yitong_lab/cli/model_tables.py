"""Text of the ``yt model`` commands: pure builders from the API's models to strings."""

from __future__ import annotations

import json
from typing import Any

from yitong_lab.cli.data_tables import plural, size, vnum
from yitong_lab.cli.output import fields, table
from yitong_lab.units import format_number, format_time

__all__ = ["models_table", "versions_table", "version_details", "compare_table", "plural", "size"]


def _metrics(m: dict[str, Any]) -> str:
    return (
        ", ".join(f"{k}={format_number(v)}" if isinstance(v, int | float) else f"{k}={v}" for k, v in sorted(m.items()))
        or "-"
    )


def models_table(models: list[dict[str, Any]]) -> str:
    rows = [
        [
            m["full_name"],
            str(m["versions"]),
            vnum(m.get("latest")),
            ", ".join(f"{a}=v{n}" for a, n in m.get("aliases", {}).items()) or "-",
            m.get("description") or "-",
        ]
        for m in models
    ]
    return table(["MODEL", "VERSIONS", "LATEST", "ALIASES", "DESCRIPTION"], rows)


def versions_table(versions: list[dict[str, Any]]) -> str:
    rows = [
        [
            vnum(v["number"]),
            format_time(v.get("created")),
            v.get("author") or "-",
            v.get("framework") or "-",
            size(v.get("bytes")),
            ", ".join(v.get("aliases") or []) or "-",
            _metrics(v.get("metrics") or {}),
            f"job {v['lineage']['job']}" if (v.get("lineage") or {}).get("job") else "-",
        ]
        for v in versions
    ]
    return table(["VERSION", "CREATED", "AUTHOR", "FRAMEWORK", "SIZE", "ALIASES", "METRICS", "FROM"], rows)


def version_details(v: dict[str, Any]) -> str:
    lineage = v.get("lineage") or {}
    data = ", ".join(d["dataset"] for d in lineage.get("datasets") or []) or "-"
    code = (lineage.get("code") or {}).get("commit") or "-"
    return fields(
        [
            ("Model", f"{v['model']} v{v['number']}"),
            ("Aliases", ", ".join(v.get("aliases") or []) or "-"),
            ("Author", v.get("author") or "-"),
            ("Created", format_time(v.get("created"))),
            ("Files", f"{plural(v.get('files', 0), 'file')}, {size(v.get('bytes'))}"),
            ("Framework", v.get("framework") or "-"),
            ("Format", v.get("format") or "-"),
            ("Signature", json.dumps(v.get("signature") or {}, sort_keys=True)),
            ("Metrics", _metrics(v.get("metrics") or {})),
            ("Tags", ", ".join(f"{k}={t}" for k, t in sorted((v.get("tags") or {}).items())) or "-"),
            (
                "From job",
                f"{lineage['job']} (run {lineage.get('run')}, {lineage.get('path') or 'outputs'})"
                if lineage.get("job")
                else "-",
            ),
            ("Code", code),
            ("Datasets", data),
            ("Message", v.get("message") or "-"),
        ]
    )


def compare_table(c: dict[str, Any]) -> str:
    heads = ["METRIC"] + [
        vnum(v["number"]) + (f" ({', '.join(v['aliases'])})" if v["aliases"] else "") for v in c["versions"]
    ]
    rows = [
        [name] + ["-" if v["metrics"][name] is None else format_number(v["metrics"][name]) for v in c["versions"]]
        for name in c["metrics"]
    ]
    return table(heads, rows) if rows else f"{c['model']}: no metrics to compare"


def batch_line(b: dict[str, Any]) -> str:
    """One line: the job, what it runs, its state and progress, the output version."""
    p = b.get("progress") or {}
    head = f"batch job {b['job']}: {b['model']} over {b['input']} -> {b['output']}"
    state = b["state"] + (f" ({b['reason']})" if b.get("reason") and b["state"] != "succeeded" else "")
    done = ""
    if p.get("chunks"):
        done = f"; {p.get('rows', 0)} of {p.get('rows_total', 0)} rows, {p.get('chunks_done', 0)}/{p['chunks']} chunks"
        if p.get("skipped"):
            done += f" ({p['skipped']} resumed)"
    version = f"; predictions: {b['output']} v{b['version']}" if b.get("version") else ""
    return f"{head}: {state}{done}{version}"
