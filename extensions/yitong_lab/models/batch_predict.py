"""The prediction half of a batch inference job, run in the framework's interpreter (the
scikit-learn environment: pandas, joblib, numpy, pyarrow; nothing of the platform's).

    python -m yitong_lab.models.batch_predict '{"model": DIR, "data": DIR, "out": DIR,
        "columns": [...], "keep": [...], "chunk_rows": N, "path": ""}'

Every CSV file (a header line, one row per line) and Parquet file under ``data/path`` is read
``chunk_rows`` rows at a time; chunk ``k`` of ``<file>.csv`` becomes ``out/<file>/part-<k>.csv``
(the ``keep`` columns and ``prediction``), of ``<file>.parquet`` ``out/<file>/part-<k>.parquet``,
written to a temporary name and renamed, so a chunk is there whole or not at all. A chunk
already there is skipped without being predicted again (a CSV file's lines of a prefix of
written chunks are skipped unparsed; a Parquet file's rows are read, only the chosen columns,
and dropped): a restarted attempt resumes where the killed one stopped. Progress goes to stdout, one JSON line per chunk: ``{"chunks", "chunks_done",
"skipped", "rows", "rows_total"}``.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

MODEL_SUFFIXES = (".joblib", ".pkl", ".pickle")
PART = "part-{:06d}.csv"
PART_PARQUET = "part-{:06d}.parquet"
SUFFIXES = (".csv", ".parquet")


def is_parquet(path: Path | str) -> bool:
    return str(path).endswith(".parquet")


def count_rows(path: Path) -> int:
    """Data lines of a CSV file (lines after the header; a last line without newline counts), a
    Parquet file's rows (from its footer)."""
    if is_parquet(path):
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 23):
            lines += block.count(b"\n")
            last = block[-1:]
    lines += last != b"\n"
    return max(lines - 1, 0)


def input_files(data: Path, path: str) -> list[tuple[Path, str]]:
    """(file, its path relative to ``data``) of the CSV and Parquet files at or under ``path``, sorted."""
    root = data / path if path else data
    if root.is_file():
        return [(root, root.relative_to(data).as_posix())]
    found = [p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    return sorted(((p, p.relative_to(data).as_posix()) for p in found), key=lambda t: t[1])


def out_dir(out: Path, rel: str) -> Path:
    for suffix in SUFFIXES:
        if rel.endswith(suffix):
            return out / rel[: -len(suffix)]
    return out / rel


def load_model(model: Path) -> Any:
    import joblib

    found = sorted(p for p in model.rglob("*") if p.suffix in MODEL_SUFFIXES and p.is_file())
    if not found:
        raise SystemExit(f"the model version has no {', '.join(MODEL_SUFFIXES)} file")
    return joblib.load(found[0])


def predict_file(model: Any, src: Path, dest: Path, plan: dict[str, Any], chunks: int, report) -> None:
    size = int(plan["chunk_rows"])
    part = PART_PARQUET if is_parquet(src) else PART
    dest.mkdir(parents=True, exist_ok=True)
    for stale in dest.glob(".part-*"):
        stale.unlink()
    done = 0
    while done < chunks and (dest / part.format(done)).exists():
        done += 1
    for k in range(done):
        report(skipped=True, rows=min(size, max(plan["_rows"] - k * size, 0)))
    if done == chunks:
        return
    columns, keep = list(plan["columns"]), list(plan["keep"])
    by_name = hasattr(model, "feature_names_in_")
    frames = (
        parquet_frames(src, [*keep, *columns], size, done)
        if is_parquet(src)
        else csv_frames(src, keep, columns, size, done)
    )
    for k, frame in enumerate(frames, start=done):
        features = frame[columns] if by_name else frame[columns].to_numpy()
        result = frame[keep].copy()
        result["prediction"] = model.predict(features)
        tmp = dest / f".{part.format(k)}.tmp"
        if part is PART_PARQUET:
            result.to_parquet(tmp, index=False)
        else:
            result.to_csv(tmp, index=False)
        os.replace(tmp, dest / part.format(k))
        report(skipped=False, rows=len(frame))


def csv_frames(src: Path, keep: list[str], columns: list[str], size: int, done: int) -> Iterator[Any]:
    """The chunks after the first ``done`` of a CSV file, as frames (the lines before them unparsed)."""
    import pandas as pd

    with open(src, "rb") as f:
        header = pd.read_csv(f, nrows=0).columns.tolist()
        f.seek(0)
        next(f)
        for _ in islice(f, done * size):  # the rows of chunks already written, unparsed
            pass
        yield from pd.read_csv(
            f, header=None, names=header, usecols=list(dict.fromkeys([*keep, *columns])), chunksize=size
        )


def parquet_frames(src: Path, wanted: list[str], size: int, done: int) -> Iterator[Any]:
    """The chunks after the first ``done`` of a Parquet file, ``size`` rows each (the last one
    fewer) whatever its row groups, as frames of the ``wanted`` columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    skip = done * size
    held: list[Any] = []
    count = 0
    for piece in pq.ParquetFile(src).iter_batches(batch_size=size, columns=list(dict.fromkeys(wanted))):
        if skip:
            dropped = min(skip, piece.num_rows)
            piece, skip = piece.slice(dropped), skip - dropped
        held.append(piece)
        count += piece.num_rows
        while count >= size:
            table = pa.Table.from_batches(held)
            yield table.slice(0, size).to_pandas()
            rest = table.slice(size)
            held, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(held).to_pandas()


def run(plan: dict[str, Any]) -> dict[str, Any]:
    data, out = Path(plan["data"]), Path(plan["out"])
    files = input_files(data, plan.get("path", ""))
    rows = {rel: count_rows(p) for p, rel in files}
    size = int(plan["chunk_rows"])
    per_file = {rel: max(math.ceil(n / size), 0) for rel, n in rows.items()}
    state = {
        "chunks": sum(per_file.values()),
        "chunks_done": 0,
        "skipped": 0,
        "rows": 0,
        "rows_total": sum(rows.values()),
    }

    def report(skipped: bool, rows: int) -> None:
        state["chunks_done"] += 1
        state["skipped"] += skipped
        state["rows"] += rows
        print(json.dumps(state), flush=True)

    print(json.dumps(state), flush=True)
    model = load_model(Path(plan["model"]))
    for src, rel in files:
        predict_file(model, src, out_dir(out, rel), plan | {"_rows": rows[rel]}, per_file[rel], report)
    return state


def main(argv: list[str]) -> int:
    run(json.loads(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
