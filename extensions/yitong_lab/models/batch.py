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
   hub token (``JUPYTERHUB_API_TOKEN``, its owner's, never the service's) and become the next
   version of the output dataset through ``POST /batch/{job}/commit``, which records the lineage;
   that call also carries the attempt's ``YITONG_JOB_TOKEN`` (``X-Yitong-Job-Token``), so only
   the job itself, not its owner's notebook, commits what the lineage calls its predictions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPORT_EVERY = 1.0  # seconds between progress posts
JOB_TOKEN_HEADER = "X-Yitong-Job-Token"


def _extensions_dir() -> str:
    return str(Path(__file__).resolve().parents[2])


def _warm_up() -> None:
    """Import what the commit needs (httpx, blake3, the upload code) while the prediction runs."""
    import threading

    def load() -> None:
        try:
            import yitong_lab.datasets.transfer
            import yitong_lab.models.sdk  # noqa: F401
        except ImportError:  # the commit reports it
            pass

    threading.Thread(target=load, daemon=True).start()


def predict(plan: dict[str, Any], out: Path, log_metrics: Any = None) -> dict[str, Any]:
    """Run the prediction half in ``plan["python"]``; its last progress line."""
    inputs = {m: os.environ[f"YITONG_INPUT_{m.upper()}"] for m in ("model", "data")}
    job = {k: plan[k] for k in ("columns", "keep", "chunk_rows", "path")} | inputs | {"out": str(out)}
    env = dict(os.environ, PYTHONPATH=_extensions_dir() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = [plan["python"], "-m", "yitong_lab.models.batch_predict", json.dumps(job)]
    state: dict[str, Any] = {}
    posted = 0.0
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env) as proc:
        _warm_up()
        assert proc.stdout is not None
        for line in proc.stdout:
            state = json.loads(line)
            if log_metrics is not None and (time.monotonic() - posted >= REPORT_EVERY or _complete(state)):
                posted = time.monotonic()
                log_metrics({f"batch_{k}": v for k, v in state.items()})
    if proc.returncode != 0:
        raise SystemExit(f"yitong batch: the prediction failed in {plan['python']} (exit {proc.returncode})")
    return state


def _complete(state: dict[str, Any]) -> bool:
    return state.get("chunks_done") == state.get("chunks")


def commit(out: Path, job_id: str) -> dict[str, Any]:
    """Upload ``out`` (what the store lacks) and commit it through the job's commit route."""
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Models

    with Client() as client:
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
    state = predict(plan, out, log_metrics)
    print(
        f"predicted {state.get('rows', 0)} rows in {state.get('chunks', 0)} chunks "
        f"({state.get('skipped', 0)} written by an earlier attempt, skipped) in {time.monotonic() - started:.1f} s",
        flush=True,
    )
    started = time.monotonic()
    v = commit(out, job_id)
    again = " (already committed)" if v.get("unchanged") else ""
    print(f"committed {v['dataset']} v{v['number']}{again} in {time.monotonic() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
