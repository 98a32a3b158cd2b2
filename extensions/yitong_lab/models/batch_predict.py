"""The prediction half of a batch inference job, run in the framework's interpreter (the
MLServer environment: pandas, joblib, numpy, pyarrow, xgboost, lightgbm, onnxruntime; nothing of
the platform's).

    python -m yitong_lab.models.batch_predict '{"model": DIR, "data": DIR, "out": DIR,
        "columns": [...], "keep": [...], "chunk_rows": N, "path": "",
        "framework": "sklearn|xgboost|lightgbm|onnx", "model_file": "model.json"}'

Every CSV file (a header line, one row per line) and Parquet file under ``data/path`` is read
``chunk_rows`` rows at a time; chunk ``k`` of ``<file>.csv`` becomes ``out/<file>/part-<k>.csv``
(the ``keep`` columns and ``prediction``), of ``<file>.parquet`` ``out/<file>/part-<k>.parquet``,
written to a temporary name and renamed, so a chunk is there whole or not at all. A chunk
already there is skipped without being predicted again (a CSV file's lines of a prefix of
written chunks are skipped unparsed; a Parquet file's rows are read, only the chosen columns,
and dropped): a restarted attempt resumes where the killed one stopped. Progress goes to stdout, one JSON line per chunk: ``{"chunks", "chunks_done",
"skipped", "rows", "rows_total"}``.

A CSV file is parsed by pyarrow (:class:`ArrowChunks`: a thread, started before the model
loads, so the parsing overlaps the framework's imports; the features as float64, the kept
columns as their text) and its parts written with pyarrow's writer where that gives the text
pandas' ``to_csv`` gives (:func:`write_part`), else with pandas. Where pyarrow cannot read on
(a feature value it does not take as a number, pyarrow missing) pandas reads from that chunk
on; a model fitted on named columns gets its frames from pandas (``"engine": "pandas"`` in the
plan: pandas throughout). ``"threads"``: the CPUs the job holds, pyarrow's parsing threads.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import queue
import sys
import threading
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

MODEL_SUFFIXES = (".joblib", ".pkl", ".pickle")
PART = "part-{:06d}.csv"
PART_PARQUET = "part-{:06d}.parquet"
SUFFIXES = (".csv", ".parquet")
PREDICTION = "prediction"


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


def load_model(model: Path, framework: str = "sklearn", file: str = "") -> Any:
    """Something with ``predict(rows) -> one value a row``, loaded as the endpoint's runtime
    loads the same file (services/yitong_services/models/runtimes.py names the file): scikit-learn
    with joblib; XGBoost as MLServer's runtime does (a regressor, else a classifier: its labels);
    LightGBM's ``Booster`` (what it predicts: a regressor's value, a binary model's probability);
    ONNX with onnxruntime on the CPU (the graph's first output)."""
    path = model / file if file else None
    if framework == "xgboost":
        import xgboost as xgb

        try:
            regressor = xgb.XGBRegressor()
            regressor.load_model(str(path))
            return regressor
        except TypeError:  # a classifier's file (as mlserver_xgboost finds out)
            classifier = xgb.XGBClassifier()
            classifier.load_model(str(path))
            return classifier
    if framework == "lightgbm":
        import lightgbm as lgb

        return lgb.Booster(model_file=str(path))
    if framework == "onnx":
        return OnnxPredictor(str(path))
    import joblib

    if path is not None:
        return joblib.load(path)
    found = sorted(p for p in model.rglob("*") if p.suffix in MODEL_SUFFIXES and p.is_file())
    if not found:
        raise SystemExit(f"the model version has no {', '.join(MODEL_SUFFIXES)} file")
    return joblib.load(found[0])


class OnnxPredictor:
    """An ONNX graph of one input: the rows cast to the type the graph declares, its first output."""

    def __init__(self, path: str) -> None:
        import onnxruntime as ort

        self.session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        inputs = self.session.get_inputs()
        if len(inputs) != 1:
            raise SystemExit(
                f"the ONNX model takes {len(inputs)} inputs; batch inference feeds one (the feature columns)"
            )
        self.input = inputs[0].name
        kind = inputs[0].type  # "tensor(float)", "tensor(double)", ...
        self.dtype = {"tensor(double)": "float64", "tensor(int64)": "int64", "tensor(int32)": "int32"}.get(
            kind, "float32"
        )
        self.output = self.session.get_outputs()[0].name

    def predict(self, rows: Any) -> Any:
        import numpy as np

        return self.session.run([self.output], {self.input: np.asarray(rows).astype(self.dtype)})[0]


def one_value_a_row(predicted: Any, rows: int) -> Any:
    """A model's answer as one column: (n,) as it is, (n, 1) flattened; more values a row is refused."""
    import numpy as np

    out = np.asarray(predicted)
    if out.ndim == 2 and out.shape[1] == 1:
        out = out.reshape(-1)
    if out.ndim != 1 or len(out) != rows:
        raise SystemExit(
            f"the model answers {tuple(out.shape)} for {rows} rows; batch inference writes one prediction a row"
        )
    return out


def resume_at(dest: Path, part: str, chunks: int) -> int:
    """The first chunk of ``dest`` still to write (temporary files of a killed attempt removed)."""
    dest.mkdir(parents=True, exist_ok=True)
    for stale in dest.glob(".part-*"):
        stale.unlink()
    done = 0
    while done < chunks and (dest / part.format(done)).exists():
        done += 1
    return done


def predict_file(
    model: Any,
    src: Path,
    dest: Path,
    plan: dict[str, Any],
    chunks: int,
    report,
    done: int | None = None,
    reader: ArrowChunks | None = None,
) -> None:
    size = int(plan["chunk_rows"])
    part = PART_PARQUET if is_parquet(src) else PART
    if done is None:
        done = resume_at(dest, part, chunks)
    for k in range(done):
        report(skipped=True, rows=min(size, max(plan["_rows"] - k * size, 0)))
    if done == chunks:
        if reader is not None:
            reader.close()
        return
    columns, keep = list(plan["columns"]), list(plan["keep"])
    by_name = hasattr(model, "feature_names_in_")
    if not is_parquet(src) and not by_name and plan.get("engine", "arrow") == "arrow":
        reader = reader or ArrowChunks(src, keep, columns, size, done, int(plan.get("threads") or 1))
        try:
            done = predict_arrow(model, reader, dest, done, columns, keep, report)
        finally:
            reader.close()
        if done < 0:  # every row read and written
            return
    elif reader is not None:
        reader.close()
    frames = (
        parquet_frames(src, [*keep, *columns], size, done)
        if is_parquet(src)
        else csv_frames(src, keep, columns, size, done)
    )
    for k, frame in enumerate(frames, start=done):
        features = frame[columns] if by_name else frame[columns].to_numpy()
        result = frame[keep].copy()
        result["prediction"] = one_value_a_row(model.predict(features), len(frame))
        tmp = dest / f".{part.format(k)}.tmp"
        if part is PART_PARQUET:
            result.to_parquet(tmp, index=False)
        else:
            result.to_csv(tmp, index=False)
        os.replace(tmp, dest / part.format(k))
        report(skipped=False, rows=len(frame))


def predict_arrow(
    model: Any, reader: ArrowChunks, dest: Path, done: int, columns: list[str], keep: list[str], report
) -> int:
    """Predict the chunks ``reader`` parses (Arrow tables; the features as float64, the kept
    columns as their text) and write each one's part: -1 when the file is done, else the chunk
    to go on from with pandas (the reader met a value Arrow does not take as a number, say)."""
    import numpy as np

    k = done
    for table in reader:
        if table is None:
            return -1
        features = np.column_stack([table.column(c).to_numpy(zero_copy_only=False) for c in columns])
        predicted = one_value_a_row(model.predict(features), table.num_rows)
        tmp = dest / f".{PART.format(k)}.tmp"
        write_part(table.select(keep), predicted, tmp)
        os.replace(tmp, dest / PART.format(k))
        report(skipped=False, rows=table.num_rows)
        k += 1
    return k


def write_part(kept: Any, predicted: Any, tmp: Path) -> None:
    """A CSV part (the ``kept`` columns, an Arrow table, and ``prediction``) as pandas'
    ``to_csv(index=False)`` writes it: with Arrow's writer when that gives the same text
    (integer and text columns, no empty value, nothing to quote), else with pandas."""
    import pyarrow as pa
    import pyarrow.csv as pc

    try:
        table = kept.append_column(PREDICTION, pa.array(predicted))
    except (pa.ArrowException, TypeError, ValueError):  # not one column of values Arrow knows
        table = None
    if table is not None and all(
        (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)) and not c.null_count
        for t, c in zip(table.schema.types, table.columns, strict=True)
    ):
        head = io.StringIO()
        csv.writer(head, lineterminator="\n").writerow(table.column_names)
        try:
            with pa.OSFile(str(tmp), "wb") as sink:
                sink.write(head.getvalue().encode())
                pc.write_csv(table, sink, pc.WriteOptions(include_header=False, quoting_style="none"))
            return
        except pa.ArrowInvalid:  # a value with a comma, a quote or a line break: pandas quotes it
            pass
    frame = kept.to_pandas()
    frame[PREDICTION] = predicted
    frame.to_csv(tmp, index=False)


def line_offset(path: Path, lines: int) -> int:
    """The byte offset just after the first ``lines`` lines of ``path`` (its size if it has fewer)."""
    pos = 0
    with open(path, "rb") as f:
        while lines:
            block = f.read(1 << 22)
            if not block:
                break
            n = block.count(b"\n")
            if n < lines:
                lines -= n
                pos += len(block)
                continue
            i = -1
            for _ in range(lines):
                i = block.index(b"\n", i + 1)
            return pos + i + 1
    return pos


def csv_header(path: Path) -> list[str]:
    """The column names on the first line of a CSV file (as the service checked them)."""
    with open(path, "rb") as f:
        first = f.readline()
    rows = list(csv.reader([first.decode("utf-8-sig").rstrip("\r\n")]))
    return [c.strip() for c in rows[0]] if rows else []


class ArrowChunks:
    """The chunks after the first ``done`` of a CSV file, ``size`` rows each (the last one fewer),
    as Arrow tables, parsed ahead by a thread (at most ``AHEAD`` chunks held) with Arrow's
    multithreaded reader on ``threads`` CPUs (the job's). Started before the model loads, so the
    parsing overlaps the framework's imports. Iterating yields tables, then ``None`` at the end;
    a value Arrow cannot convert stops it early (the caller goes on with pandas)."""

    AHEAD = 2
    BLOCK = 1 << 22

    def __init__(self, src: Path, keep: list[str], columns: list[str], size: int, done: int, threads: int):
        self._queue: queue.Queue[Any] = queue.Queue(self.AHEAD)
        self._stop = threading.Event()
        args = (src, keep, columns, size, done, max(1, threads))
        self._thread = threading.Thread(target=self._read, args=args, daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[Any]:
        while True:
            item = self._queue.get()
            if isinstance(item, _Unreadable):
                print(f"yitong batch: reading on with pandas: {item}", file=sys.stderr, flush=True)
                return
            if isinstance(item, BaseException):
                raise item
            yield item
            if item is None:
                return

    def close(self) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def _read(self, src: Path, keep: list[str], columns: list[str], size: int, done: int, threads: int) -> None:
        try:
            import pyarrow as pa
            import pyarrow.csv as pc

            pa.set_cpu_count(threads)
            header = csv_header(src)
            types = {c: pa.string() for c in keep} | {c: pa.float64() for c in columns}
            stream = pa.OSFile(str(src))
            stream.seek(line_offset(src, 1 + done * size))
            reader = pc.open_csv(
                stream,
                read_options=pc.ReadOptions(column_names=header, block_size=self.BLOCK, use_threads=threads > 1),
                convert_options=pc.ConvertOptions(
                    include_columns=list(dict.fromkeys([*keep, *columns])), column_types=types
                ),
            )
            held: list[Any] = []
            count = 0
            for batch in reader:
                held.append(batch)
                count += batch.num_rows
                while count >= size:
                    table = pa.Table.from_batches(held)
                    if not self._put(table.slice(0, size)):
                        return
                    rest = table.slice(size)
                    held, count = rest.to_batches(), rest.num_rows
            if count and not self._put(pa.Table.from_batches(held)):
                return
            self._put(None)
        except ImportError as e:
            self._put(_Unreadable(str(e)))
        except Exception as e:
            self._put(_Unreadable(str(e)) if type(e).__name__ in ("ArrowInvalid", "ArrowNotImplementedError") else e)


class _Unreadable(Exception):
    """What the Arrow reader could not parse or convert (pandas reads it instead)."""


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
    threads = max(1, int(plan.get("threads") or 1))
    todo = []
    for src, rel in files:
        dest = out_dir(out, rel)
        todo.append((src, rel, dest, resume_at(dest, PART_PARQUET if is_parquet(src) else PART, per_file[rel])))
    # the first CSV file still to predict is parsed while the framework's imports run (the model loads)
    first = next((t for t in todo if not is_parquet(t[0]) and t[3] < per_file[t[1]]), None)
    ahead: dict[str, ArrowChunks] = {}
    if first is not None and plan.get("engine", "arrow") == "arrow":
        ahead[first[1]] = ArrowChunks(first[0], list(plan["keep"]), list(plan["columns"]), size, first[3], threads)
    model = load_model(Path(plan["model"]), plan.get("framework", "sklearn"), plan.get("model_file", ""))
    for src, rel, dest, done in todo:
        the_plan = plan | {"_rows": rows[rel], "threads": threads}
        predict_file(model, src, dest, the_plan, per_file[rel], report, done, ahead.pop(rel, None))
    return state


def main(argv: list[str]) -> int:
    run(json.loads(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
