"""The models SDK: :class:`Models` wraps the ``/models`` REST routes and adds ``register`` from
a local directory (its files go up like a dataset commit's) and ``pull``.

Names: a model is ``vc/name``; a version is ``vc/name@ref`` where ``ref`` is a number,
``v<number>``, an alias or ``latest`` (the default). A model's files are versions of the
dataset ``vc/model-<name>``.
"""

from __future__ import annotations

import builtins
import json
import os
from typing import Any
from urllib.parse import quote

from yitong_lab.client import Client, YitongError
from yitong_lab.datasets.manifest import parse_ref


def _q(text: str | int) -> str:
    return quote(str(text), safe="")


def _base(model: str) -> str:
    ref = parse_ref(model, allow_version=False)
    return f"/models/{_q(ref.vc)}/{_q(ref.name)}"


def _version(ref: str) -> tuple[str, str]:
    parsed = parse_ref(ref)
    return f"/models/{_q(parsed.vc)}/{_q(parsed.name)}", parsed.ref or "latest"


class Models:
    """``Models(client=None)``: the model calls of one :class:`~yitong_lab.client.Client`."""

    def __init__(self, client: Client | None = None):
        self.client = client or Client()

    def list(self, vc: str | None = None) -> builtins.list[dict[str, Any]]:
        return self.client.request("GET", "/models", params={"vc": vc} if vc else None)

    def get(self, model: str) -> dict[str, Any]:
        return self.client.request("GET", _base(model))

    def create(self, model: str, description: str = "") -> dict[str, Any]:
        ref = parse_ref(model, allow_version=False)
        body = {"vc": ref.vc, "name": ref.name, "description": description}
        return self.client.request("POST", "/models", json=body)

    def delete(self, ref: str) -> None:
        """``vc/name`` deletes the model; ``vc/name@ref`` one version."""
        base, version = _version(ref)
        self.client.request("DELETE", base if "@" not in ref else f"{base}/versions/{_q(version)}")

    def versions(self, model: str) -> builtins.list[dict[str, Any]]:
        return self.client.request("GET", _base(model) + "/versions")

    def version(self, ref: str) -> dict[str, Any]:
        base, version = _version(ref)
        return self.client.request("GET", f"{base}/versions/{_q(version)}")

    def alias(self, ref: str, name: str) -> dict[str, Any]:
        """Point alias ``name`` (``production``) at the version ``ref`` names; it moves."""
        number = self.version(ref)["number"]
        base, _ = _version(ref)
        return self.client.request("PUT", f"{base}/aliases/{_q(name)}", json={"version": number})

    def unalias(self, model: str, name: str) -> None:
        self.client.request("DELETE", f"{_base(model)}/aliases/{_q(name)}")

    def compare(self, model: str, versions: builtins.list[str] | None = None) -> dict[str, Any]:
        params = {"versions": ",".join(versions)} if versions else None
        return self.client.request("GET", _base(model) + "/compare", params=params)

    def register(
        self,
        model: str,
        path: str | os.PathLike | None = None,
        *,
        job: int | None = None,
        framework: str = "",
        format: str = "",
        signature: dict[str, Any] | None = None,
        metrics: dict[str, float] | None = None,
        tags: dict[str, str] | None = None,
        lineage: dict[str, Any] | None = None,
        message: str = "",
        create: bool = True,
        progress: Any = "auto",
    ) -> dict[str, Any]:
        """A new version of ``model`` from the directory (or file) ``path``, or with ``job``
        from that succeeded job's outputs (``path`` under its outputs directory; lineage from
        its ledger record). Creates the model when missing (``create``)."""
        body: dict[str, Any] = {
            "message": message,
            "framework": framework,
            "format": format,
            "signature": signature or {},
            "metrics": metrics or {},
            "tags": tags or {},
            "lineage": lineage or {},
        }
        try:
            self.get(model)
        except YitongError as error:
            if error.status != 404 or not create:
                raise
            self.create(model)
        if job is not None:
            body |= {"job": job, "path": str(path or "")}
        else:
            if path is None:
                raise ValueError("give a directory (or file) to register, or job=")
            body["files"] = self._upload(path, progress, model.split("/", 1)[0] if "/" in model else None)
        return self.client.request("POST", _base(model) + "/versions", json=body)

    def _upload(self, path: str | os.PathLike, progress: Any, vc: str | None = None) -> builtins.list[dict[str, Any]]:
        """The manifest entries of ``path``, whose objects the store now has."""
        from yitong_lab.datasets.local import base_dir, local_path, scan
        from yitong_lab.datasets.packs import Item
        from yitong_lab.datasets.progress import make
        from yitong_lab.datasets.sdk import Datasets, open_cache
        from yitong_lab.datasets.transfer import Uploader

        root = os.path.abspath(path)
        root_dir = base_dir(root)
        bar = make(progress)
        try:
            with open_cache(False) as cache, Uploader(self.client, bar, vc=vc) as uploader:
                files = scan(root)
                _, built = Datasets._local_manifest(root, files, cache, bar, memo=False)
                manifest = built[0]
                uploader.finish(Item(f["hash"], f["size"], local_path(root_dir, f["path"])) for f in manifest["files"])
        finally:
            bar.close()
        return manifest["files"]

    def batch(
        self,
        ref: str,
        input: str,
        output: str,
        *,
        columns: builtins.list[str] | None = None,
        keep: builtins.list[str] | None = None,
        path: str = "",
        chunk_rows: int = 100_000,
        cpu: float | str = 1,
        memory: str | int = "2Gi",
        retries: int = 2,
        wait: float = 0,
    ) -> dict[str, Any]:
        """Batch inference: a job that runs the version ``ref`` over the CSV and Parquet files of the dataset
        version ``input`` (``vc/name@ref``) and commits the predictions as the next version of
        ``output`` (``vc/name``, created when missing). With ``wait`` (seconds), poll until the
        job ends (a YitongError 504 past that); the answer says the output version."""
        base, version = _version(ref)
        body = {
            "input": input,
            "output": output,
            "path": path,
            "columns": columns or [],
            "keep": keep or [],
            "chunk_rows": chunk_rows,
            "cpu": cpu,
            "memory": memory,
            "retries": retries,
        }
        b = self.client.request("POST", f"{base}/versions/{_q(version)}/batch", json=body)
        return self.batch_wait(b["job"], wait) if wait else b

    def batch_status(self, job: int) -> dict[str, Any]:
        """A batch inference job: state, progress, the output version once committed."""
        return self.client.request("GET", f"/batch/{int(job)}")

    def batch_wait(self, job: int, wait: float) -> dict[str, Any]:
        import time

        deadline = time.monotonic() + wait
        while (b := self.batch_status(job))["state"] not in ("succeeded", "failed", "cancelled"):
            if time.monotonic() > deadline:
                raise YitongError(504, f"batch job {job} has not ended after {wait:g} s (state {b['state']})")
            time.sleep(BATCH_POLL_ENDING if _predicted(b) else BATCH_POLL)
        return b

    def pull(self, ref: str, directory: str | os.PathLike, **options: Any) -> dict[str, Any]:
        """Download the version ``ref`` names into ``directory`` (see ``Datasets.pull``)."""
        from yitong_lab.datasets.sdk import Datasets

        v = self.version(ref)
        vc, name = v["model"].split("/", 1)
        return Datasets(self.client).pull(f"{vc}/model-{name}@{v['number']}", directory, **options)


BATCH_POLL = 0.25  # seconds between looks at a batch job that is still predicting
BATCH_POLL_ENDING = 0.05  # ... and at one whose every chunk is written (only the commit is left)


def _predicted(b: dict[str, Any]) -> bool:
    """Every chunk written (the runner posts that line at once): the job is committing."""
    p = b.get("progress") or {}
    return bool(p.get("chunks")) and p.get("chunks_done") == p.get("chunks")


class Endpoints:
    """``Endpoints(client=None)``: deploy model versions as Open Inference Protocol endpoints."""

    def __init__(self, client: Client | None = None):
        self.client = client or Client()

    def list(self) -> builtins.list[dict[str, Any]]:
        return self.client.request("GET", "/endpoints")

    def get(self, name: str) -> dict[str, Any]:
        return self.client.request("GET", f"/endpoints/{_q(name)}")

    def create(self, name: str, model: str, profile: str, wait: float = 0, replicas: int = 1) -> dict[str, Any]:
        """Serve ``model`` (``vc/name@ref``) as endpoint ``name`` on ``replicas`` replicas, each
        holding ``profile`` in the VC; with ``wait`` (seconds), poll until it is ready (a
        YitongError 504 past that; at once, with the endpoint's reason, when it fails)."""
        parse_ref(model)
        body = {"name": name, "model": model, "profile": profile, "replicas": replicas}
        e = self.client.request("POST", "/endpoints", json=body)
        return self._wait(e, wait, lambda e: e["state"] == "ready", "is not ready")

    def scale(self, name: str, replicas: int, wait: float = 0) -> dict[str, Any]:
        """Run ``replicas`` replicas of every version of endpoint ``name`` with a share: new ones
        queue like jobs (past the VC's quota they wait, and the endpoint's reason says so), extra
        ones drain and stop. With ``wait`` (seconds), poll until every replica is ready."""
        e = self.client.request("POST", f"/endpoints/{_q(name)}/scale", json={"replicas": replicas})
        return self._wait(e, wait, lambda e: e["state"] == "ready" and not e["reason"], "has not scaled")

    def _wait(self, e: dict[str, Any], wait: float, done: Any, what: str) -> dict[str, Any]:
        import time

        deadline = time.monotonic() + wait
        while wait and not done(e):
            if e["state"] == "failed" or " stopped: " in (e.get("reason") or ""):  # no use waiting on
                raise YitongError(502, f"endpoint {e['name']} {e['state']}: {e.get('reason') or 'no reason given'}")
            if time.monotonic() > deadline:
                reason = f": {e['reason']}" if e.get("reason") else ""
                raise YitongError(504, f"endpoint {e['name']} {what} after {wait:g} s ({e['state']}{reason})")
            time.sleep(0.2)
            e = self.get(e["name"])
        return e

    def deploy(
        self,
        name: str,
        model: str,
        canary: int | None = None,
        profile: str | None = None,
        wait: float = 0,
        replicas: int | None = None,
    ) -> dict[str, Any]:
        """Roll endpoint ``name`` to ``model`` (``vc/name@ref``, a version of its model): the new
        replicas start, take the traffic once ready, the old ones drain and stop; with
        ``canary`` (percent) the new version takes only that share. ``replicas``: per version
        (default: the current count). With ``wait`` (seconds), poll until the roll is done (a
        YitongError 504 past that)."""
        vc, mname, ref = parse_ref(model)
        body: dict[str, Any] = {"model": model}
        if canary is not None:
            number = self.client.request("GET", f"/models/{_q(vc)}/{_q(mname)}/versions/{_q(ref or 'latest')}")[
                "number"
            ]
            body["traffic"] = {f"v{number}": canary}
        if profile:
            body["profile"] = profile
        if replicas is not None:
            body["replicas"] = replicas
        e = self.client.request("POST", f"/endpoints/{_q(name)}/deploy", json=body)
        return self._wait(e, wait, lambda e: e["state"] == "ready" and not e["reason"], "has not rolled")

    def delete(self, name: str) -> None:
        self.client.request("DELETE", f"/endpoints/{_q(name)}")

    def create_key(self, name: str, note: str = "") -> dict[str, Any]:
        """Admin: a key for callers outside the endpoint's VC, good for its ``/v2/...`` routes
        only (``Authorization: Bearer <key>``); ``["key"]`` is the key, shown this once."""
        return self.client.request("POST", f"/endpoints/{_q(name)}/keys", json={"note": note})

    def keys(self, name: str) -> builtins.list[dict[str, Any]]:
        """Admin: the endpoint's keys (id, prefix, note, created_by, created, revoked)."""
        return self.client.request("GET", f"/endpoints/{_q(name)}/keys")

    def revoke_key(self, name: str, key_id: int) -> None:
        """Admin: revoke a key; requests with it are refused from now on."""
        self.client.request("DELETE", f"/endpoints/{_q(name)}/keys/{int(key_id)}")

    def infer(self, name: str, inputs: builtins.list[dict[str, Any]]) -> dict[str, Any]:
        """One V2 infer call: ``inputs`` as the protocol writes them ({name, shape, datatype, data})."""
        return self.client.request("POST", f"/endpoints/{_q(name)}/v2/models/{_q(name)}/infer", json={"inputs": inputs})


SKLEARN = ("sklearn", "scikit-learn")
PYTORCH = ("pytorch", "torch")


def _convert_in(python: str, argv: list[str]) -> dict[str, Any]:
    import subprocess

    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([python, "-m", "yitong_lab.models.convert", *argv], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise YitongError(0, f"conversion to ONNX failed in {python}: {tail[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _one(folder: str, suffixes: tuple[str, ...], what: str) -> str:
    found = sorted(p for p in os.listdir(folder) if p.endswith(suffixes))
    if not found:
        raise YitongError(422, f"{what} has no {' or '.join(suffixes)} file to convert")
    return os.path.join(folder, found[0])


def convert(models: Models, ref: str, *, python: str | None = None, progress: Any = None) -> dict[str, Any]:
    """The version ``ref`` converted to ONNX, checked on sample inputs against the original, and
    registered as a new version of the same model (framework ``onnx``) whose lineage names the
    source version and the check. scikit-learn versions (a ``.joblib``/``.pkl`` file and a
    signature giving the input width) go through skl2onnx; PyTorch versions (framework
    ``pytorch``: a ``torch.export`` program saved with ``torch.export.save``, ``.pt2``) through
    torch.onnx, the ONNX graph giving the new version's signature. ``python``: an interpreter
    with the framework, its converter and onnxruntime (default: this one; ``make mlserver``'s
    ``.venv-mlserver/bin/python`` has them all)."""
    import sys
    import tempfile

    v = models.version(ref)
    what = f"{v['model']} v{v['number']}"
    framework = v["framework"].lower()
    if framework not in SKLEARN + PYTORCH:
        raise YitongError(
            422, f"{what} is {v['framework'] or 'of no framework'}; ONNX conversion takes sklearn and pytorch"
        )
    inputs = (v.get("signature") or {}).get("inputs") or []
    if framework in SKLEARN and (len(inputs) != 1 or not inputs[0].get("shape") or inputs[0]["shape"][-1] < 1):
        raise YitongError(422, f"{what} needs a signature with one input of known width to convert")
    with tempfile.TemporaryDirectory(prefix="yt-convert-") as tmp:
        src = os.path.join(tmp, "src")
        models.pull(f"{v['model']}@{v['number']}", src, progress=progress)
        os.mkdir(os.path.join(tmp, "onnx"))
        out = os.path.join(tmp, "onnx", "model.onnx")
        if framework in SKLEARN:
            model_file = _one(src, (".joblib", ".pkl", ".pickle"), what)
            check = _convert_in(python or sys.executable, [model_file, out, str(inputs[0]["shape"][-1])])
            signature = v["signature"]
        else:
            check = _convert_in(python or sys.executable, ["--pytorch", _one(src, (".pt2",), what), out])
            signature = check.pop("signature")
        if not check["ok"]:
            labels = f"labels equal: {check['labels_equal']}, " if "labels_equal" in check else ""
            raise YitongError(
                422,
                f"the ONNX model of {what} disagrees with it on {check['rows']} sample rows "
                f"({labels}largest difference {check['max_abs_diff']:.3g})",
            )
        return models.register(
            v["model"],
            os.path.join(tmp, "onnx"),
            framework="onnx",
            format="onnx",
            signature=signature,
            metrics=v["metrics"],
            tags=v["tags"],
            lineage={"converted_from": f"{v['model']}@{v['number']}", "check": check},
            message=f"ONNX of v{v['number']} ({check['converter']})",
            progress=progress,
        )
