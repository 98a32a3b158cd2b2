"""The program of a batch inference job (the platform writes its spec: models/batch.py in the
service). It runs in the job's interpreter, as the job's owner:

    python -m yitong_lab.models.batch '{"python": ..., "columns": [...], "keep": [...],
                                        "chunk_rows": N, "path": ""}'

1. predict: ``python -m yitong_lab.models.batch_predict`` in the framework's interpreter
   (``python``: the scikit-learn environment) reads the materialised, read-only inputs (mounts
   ``model`` and ``data``) and writes the predictions chunk by chunk under the job's outputs
   (``predictions/``); chunks a killed attempt wrote are skipped. Its progress lines become the
   run's metrics (``batch_rows``, ``batch_chunks_done``, ... at most one post a second), so
   ``yt model batch-show`` and the job's detail show them.
2. commit: the predictions go up like any upload (only what the store lacks) with the job's own
   hub token; each part goes up as soon as it is written, while the next chunks are predicted
   (:class:`Parts`), so at the end only the parts still on their way are waited for; the token (``JUPYTERHUB_API_TOKEN``, its owner's, never the service's) and become the next
   version of the output dataset through ``POST /batch/{job}/commit``, which records the lineage;
   that call also carries the attempt's ``YITONG_JOB_TOKEN`` (``X-Yitong-Job-Token``), so only
   the job itself, not its owner's notebook, commits what the lineage calls its predictions.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPORT_EVERY = 1.0  # seconds between progress posts
JOB_TOKEN_HEADER = "X-Yitong-Job-Token"


def _extensions_dir() -> str:
    return str(Path(__file__).resolve().parents[2])


class Parts:
    """The parts under ``out``, sent to the content store as they are written: ``poke()`` (after
    a chunk is written) has a thread find the new part files (a part appears whole: written to a
    hidden temporary name, then renamed), hash them and offer them to an
    :class:`~yitong_lab.datasets.transfer.Uploader` (the service is asked which it lacks; those
    go up). ``files()`` waits for the uploads and returns the manifest entries of every file
    under ``out``. A failure here is no failure of the job: :func:`commit` uploads what is left."""

    def __init__(self, out: Path):
        self.out = out
        self.hashes: dict[str, tuple[tuple[int, int, int], str]] = {}  # path: ((size, mtime, inode), hash)
        self.error: BaseException | None = None
        self._pokes: queue.Queue[bool] = queue.Queue()
        self._uploader: Any = None
        self._client: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def poke(self) -> None:
        self._pokes.put(True)

    def _run(self) -> None:
        try:
            from yitong_lab.client import Client
            from yitong_lab.datasets.progress import make
            from yitong_lab.datasets.transfer import Uploader

            self._client = Client()
            self._uploader = Uploader(self._client, make(None))
            more = True
            while more:
                more = self._pokes.get()
                while not self._pokes.empty():  # one scan for every poke that waited
                    more = self._pokes.get() and more
                self._offer(hidden=False)
        except BaseException as e:  # the commit uploads what is left
            self.error = e

    def _offer(self, hidden: bool) -> list[dict[str, Any]]:
        """Hash the files not yet hashed (not the hidden ones unless ``hidden``), offer them;
        the manifest entries of all."""
        from blake3 import blake3

        from yitong_lab.datasets.local import local_path, scan
        from yitong_lab.datasets.packs import Item

        entries, fresh = [], []
        for path, size, mtime, inode in scan(str(self.out)):
            if not hidden and any(name.startswith(".") for name in path.split("/")):
                continue
            known = self.hashes.get(path)
            if known is None or known[0] != (size, mtime, inode):
                file = local_path(str(self.out), path)
                with open(file, "rb") as f:
                    digest = blake3(f.read()).hexdigest()
                known = self.hashes[path] = ((size, mtime, inode), digest)
                fresh.append(Item(digest, size, file))
            entries.append({"path": path, "size": size, "hash": known[1]})
        if fresh:
            self._uploader.offer(fresh)
        return entries

    def files(self) -> list[dict[str, Any]]:
        """Every file's manifest entry, once the store has them all (raises what failed)."""
        from yitong_lab.datasets.manifest import canonical

        self._pokes.put(False)
        self._thread.join()
        try:
            if self.error is not None:
                raise self.error
            entries = self._offer(hidden=True)
            self._uploader.finish()
            return canonical(entries)["files"]
        finally:
            self.close()

    def close(self) -> None:
        self._pokes.put(False)
        if self._uploader is not None:
            self._uploader.__exit__(None, None, None)
        if self._client is not None:
            self._client.close()


def predict(plan: dict[str, Any], out: Path, log_metrics: Any = None, parts: Parts | None = None) -> dict[str, Any]:
    """Run the prediction half in ``plan["python"]``; its last progress line. ``parts`` is
    poked after each chunk written."""
    inputs = {m: os.environ[f"YITONG_INPUT_{m.upper()}"] for m in ("model", "data")}
    job = {k: plan[k] for k in ("columns", "keep", "chunk_rows", "path")} | inputs | {"out": str(out)}
    job["threads"] = int(plan.get("threads") or 1)
    env = dict(os.environ, PYTHONPATH=_extensions_dir() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = [plan["python"], "-m", "yitong_lab.models.batch_predict", json.dumps(job)]
    state: dict[str, Any] = {}
    posted = 0.0
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            state = json.loads(line)
            if parts is not None and state.get("chunks_done"):
                parts.poke()
            if log_metrics is not None and (time.monotonic() - posted >= REPORT_EVERY or _complete(state)):
                posted = time.monotonic()
                log_metrics({f"batch_{k}": v for k, v in state.items()})
    if proc.returncode != 0:
        raise SystemExit(f"yitong batch: the prediction failed in {plan['python']} (exit {proc.returncode})")
    return state


def _complete(state: dict[str, Any]) -> bool:
    return state.get("chunks_done") == state.get("chunks")


def commit(out: Path, job_id: str, parts: Parts | None = None) -> dict[str, Any]:
    """Upload ``out`` (what the store lacks; ``parts``: what it has sent so far) and commit it
    through the job's commit route."""
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Models

    files = None
    if parts is not None:
        try:
            files = parts.files()
        except Exception as e:  # send them again the plain way
            print(f"yitong batch: the early upload failed ({e}); uploading the predictions now", flush=True)
    with Client() as client:
        if files is None:
            files = Models(client)._upload(out, None) if any(out.rglob("*")) else []
        proof = {JOB_TOKEN_HEADER: os.environ.get("YITONG_JOB_TOKEN", "")}  # that the job itself commits
        answer = client.http().post(f"{client.url}/batch/{job_id}/commit", json={"files": files}, headers=proof)
        return client.check(answer)


def main(argv: list[str]) -> int:
    from yitong_lab import log_metrics

    plan = json.loads(argv[0])
    job_id = os.environ["YITONG_JOB_ID"]
    out = Path(os.environ["YITONG_OUTPUT_DIR"]) / "predictions"
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    parts = Parts(out)
    try:
        state = predict(plan, out, log_metrics, parts)
    except BaseException:
        parts.close()
        raise
    print(
        f"predicted {state.get('rows', 0)} rows in {state.get('chunks', 0)} chunks "
        f"({state.get('skipped', 0)} written by an earlier attempt, skipped) in {time.monotonic() - started:.1f} s",
        flush=True,
    )
    started = time.monotonic()
    v = commit(out, job_id, parts)
    again = " (already committed)" if v.get("unchanged") else ""
    print(f"committed {v['dataset']} v{v['number']}{again} in {time.monotonic() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
