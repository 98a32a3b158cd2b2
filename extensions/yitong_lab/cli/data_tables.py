"""Text of the ``yt data`` commands: pure builders from the API's models to strings."""

from __future__ import annotations

from typing import Any

from yitong_lab.cli.output import fields, table
from yitong_lab.units import format_amount, format_time


def size(n: int | None) -> str:
    return format_amount("memory", n) if n is not None else "-"


def vnum(n: int | None) -> str:
    return f"v{n}" if n is not None else "-"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def tags_text(tags: Any) -> str:
    if isinstance(tags, dict):
        tags = sorted(tags)
    return ", ".join(tags) if tags else "-"


def datasets_table(datasets: list[dict[str, Any]]) -> str:
    rows = []
    for d in datasets:
        latest = d.get("latest")
        number = latest.get("number") if isinstance(latest, dict) else latest
        rows.append(
            [
                d.get("full_name") or f"{d['vc']}/{d['name']}",
                d.get("visibility") or "-",
                str(d.get("versions", "-")),
                vnum(number),
                size(d.get("bytes")) if number else "-",
                d.get("description") or "-",
            ]
        )
    return table(["DATASET", "VISIBILITY", "VERSIONS", "LATEST", "SIZE", "DESCRIPTION"], rows)


def versions_table(versions: list[dict[str, Any]]) -> str:
    rows = [
        [
            vnum(v["number"]),
            format_time(v.get("created")),
            v.get("author") or "-",
            str(v.get("files", "-")),
            size(v.get("bytes")),
            vnum(v.get("parent")),
            tags_text(v.get("tags")),
            v.get("message") or "-",
        ]
        for v in versions
    ]
    return table(["VERSION", "CREATED", "AUTHOR", "FILES", "SIZE", "PARENT", "TAGS", "MESSAGE"], rows)


def made_by(lineage: dict[str, Any]) -> str:
    """``batch job 12: vision/iris@1 over vision/flowers@1`` for a version a platform job made."""
    read = ", ".join(f"{i.get('dataset')}@{i.get('version')}" for i in lineage.get("inputs") or [])
    what = "batch job" if lineage.get("kind") == "batch-inference" else "job"
    return f"{what} {lineage['job']}: {lineage.get('model') or '-'} over {read or '-'}"


def version_fields(v: dict[str, Any]) -> str:
    lineage = v.get("lineage") or {}
    made = [("made by", made_by(lineage))] if lineage.get("job") else []
    return fields(
        [
            ("dataset", v["dataset"]),
            ("version", vnum(v["number"])),
            ("parent", vnum(v.get("parent"))),
            ("author", v.get("author") or "-"),
            ("created", format_time(v.get("created"))),
            ("message", v.get("message") or "-"),
            ("tags", tags_text(v.get("tags"))),
            ("files", f"{v.get('files', '-')} ({size(v.get('bytes'))})"),
            ("manifest", v.get("manifest") or "-"),
            *made,
        ]
    )


def version_details(v: dict[str, Any], files: list[dict[str, Any]]) -> str:
    rows = [[f["path"], size(f["size"]), f["hash"][:12]] for f in files]
    return version_fields(v) + ("\n\n" + table(["PATH", "SIZE", "HASH"], rows) if rows else "")


def diff_text(dataset: str, d: dict[str, Any]) -> str:
    def label(ref: Any) -> str:
        return "(nothing)" if ref is None else (f"v{ref}" if str(ref).isdigit() else str(ref))

    head = (
        f"{dataset} {label(d.get('from'))} -> {label(d.get('to'))}: {len(d['added'])} added, "
        f"{len(d['removed'])} removed, {len(d['changed'])} changed"
    )
    lines = [head]
    lines += [f"+ {f['path']}  ({size(f['size'])})" for f in d["added"]]
    lines += [f"- {f['path']}  ({size(f['size'])})" for f in d["removed"]]
    lines += [f"M {f['path']}  ({size(f['old_size'])} -> {size(f['size'])})" for f in d["changed"]]
    return "\n".join(lines)


def commit_text(v: dict[str, Any]) -> str:
    what = f"{plural(v.get('files', 0), 'file')}, {size(v.get('bytes'))}"
    if v.get("unchanged"):
        return f"nothing changed: {v['dataset']} {vnum(v['number'])} already has this content ({what})"
    up = v.get("uploaded") or {}
    return (
        f"committed {v['dataset']} {vnum(v['number'])}: {what} "
        f"(uploaded {plural(up.get('objects', 0), 'object')}, {size(up.get('bytes', 0))})"
    )


def pull_text(r: dict[str, Any]) -> str:
    return (
        f"pulled {r['dataset']} {vnum(r['number'])} into {r['path']}: "
        f"{plural(r['fetched'], 'file')} fetched ({size(r['bytes'])}), {r['unchanged']} unchanged, "
        f"{r['deleted']} deleted"
    )


def gc_text(r: dict[str, Any]) -> str:
    return (
        f"removed {plural(r.get('objects', 0), 'object')} ({size(r.get('bytes', 0))}) and "
        f"{plural(r.get('packs', 0), 'pack')}"
    )


def verify_text(r: dict[str, Any]) -> str:
    corrupt, missing = r.get("corrupt") or [], r.get("missing") or []
    cached = r.get("cache_corrupt") or []
    if not corrupt and not missing and not cached:
        return f"checked {plural(r.get('checked', 0), 'object')}: all intact"
    lines = [
        f"checked {plural(r.get('checked', 0), 'object')}: {len(corrupt)} corrupt, {len(missing)} missing"
        + (f", {len(cached)} changed in the materialise cache" if cached else "")
    ]
    lines += [f"corrupt  {h}" for h in corrupt] + [f"missing  {h}" for h in missing]
    lines += [f"changed  {h} (materialise cache)" for h in cached]
    return "\n".join(lines)
