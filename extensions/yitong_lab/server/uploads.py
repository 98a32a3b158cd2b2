"""Browser uploads into a dataset: the panel streams a folder's files into a staging directory
of this server, then the SAME SDK commit as ``yt data commit`` runs in a thread.

- ``POST yitong/datasets/uploads`` ``{"dataset": "vc/name", "message": "..."}`` -> 201 ``{"id"}``
- ``PUT yitong/datasets/uploads/<id>/files/<path>``: the file's bytes (streamed to disk, never
  held in memory; ``path`` checked like a manifest path) -> 201 ``{"path", "size"}``
- ``POST yitong/datasets/uploads/<id>/commit`` -> 202 ``{"task": "<id>"}``; the staging
  directory is removed when the commit ends
- ``DELETE yitong/datasets/uploads/<id>``: drop an upload that will not be committed
- ``GET yitong/tasks/<id>`` -> ``{id, dataset, state: running|done|error, phase, done, total,
  version, unchanged, error}`` (``done``/``total`` in bytes of the current phase)

Every handler needs a logged-in user and passes the authorizer (resource ``yitong``); the
streamed PUT checks both in ``prepare()``, before any byte is written. Disk and network work
runs in threads: the event loop is never blocked.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from yitong_lab.server.handlers import YitongHandler

MAX_FILE_BYTES = 1 << 40
UPLOADS: dict[str, dict[str, Any]] = {}  # id -> {dataset, message, dir}
TASKS: dict[str, dict[str, Any]] = {}  # id -> the task model above
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="yt-upload-io")  # disk work
_COMMITS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="yt-upload-commit")


def run_commit(task: dict[str, Any], upload: dict[str, Any]) -> None:
    """In a thread: the SDK commit of the staging directory, reporting into ``task``."""
    from yitong_lab.client import Client, YitongError
    from yitong_lab.datasets.sdk import Datasets

    def progress(phase: str, done: int, total: int) -> None:
        task.update(phase=phase, done=done, total=total)

    try:
        with Client() as client:
            version = Datasets(client).commit(
                upload["dir"], upload["dataset"], upload["message"], progress=progress, stat_cache=False
            )
        task.update(state="done", version=version["number"], unchanged=version.get("unchanged", False), phase="done")
    except (YitongError, ValueError, OSError) as error:
        task.update(state="error", error=str(error))
    except Exception as error:
        task.update(state="error", error=f"{type(error).__name__}: {error}")
    finally:
        shutil.rmtree(upload["dir"], ignore_errors=True)


class UploadsHandler(YitongHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        from yitong_lab.datasets.manifest import parse_ref

        try:
            body = json.loads(self.request.body or b"{}")
            dataset = parse_ref(str(body.get("dataset", "")), allow_version=False).dataset
        except ValueError as error:
            return self.send(400, {"detail": str(error)})
        directory = await asyncio.get_running_loop().run_in_executor(
            _POOL, lambda: tempfile.mkdtemp(prefix="yt-upload-")
        )
        upload_id = uuid.uuid4().hex
        UPLOADS[upload_id] = {"dataset": dataset, "message": str(body.get("message") or ""), "dir": directory}
        self.send(201, {"id": upload_id, "dataset": dataset})


class UploadHandler(YitongHandler):
    @web.authenticated
    @authorized
    async def delete(self, upload_id: str) -> None:
        upload = UPLOADS.pop(upload_id, None)
        if upload is None:
            return self.send(404, {"detail": f"no upload {upload_id}"})
        await asyncio.get_running_loop().run_in_executor(
            _POOL, lambda: shutil.rmtree(upload["dir"], ignore_errors=True)
        )
        self.send(204, None)


class CommitHandler(YitongHandler):
    @web.authenticated
    @authorized
    async def post(self, upload_id: str) -> None:
        upload = UPLOADS.pop(upload_id, None)
        if upload is None:
            return self.send(404, {"detail": f"no upload {upload_id} (committed or deleted already?)"})
        task_id = uuid.uuid4().hex
        task = TASKS[task_id] = {
            "id": task_id,
            "dataset": upload["dataset"],
            "state": "running",
            "phase": "hash",
            "done": 0,
            "total": 0,
            "version": None,
            "unchanged": False,
            "error": None,
        }
        _COMMITS.submit(run_commit, task, upload)
        self.send(202, {"task": task_id})


class TaskHandler(YitongHandler):
    @web.authenticated
    @authorized
    def get(self, task_id: str) -> None:
        task = TASKS.get(task_id)
        if task is None:
            return self.send(404, {"detail": f"no task {task_id}"})
        self.send(200, dict(task))


@web.stream_request_body
class FileHandler(YitongHandler):
    """``PUT .../files/<path>``: bytes go to ``<staging>/<path>.yt-tmp-<id>`` as they arrive,
    renamed to ``<path>`` when the request is complete."""

    _file: Any = None

    async def prepare(self) -> None:  # type: ignore[override]  # jupyter_server's APIHandler takes no arguments
        await super().prepare()
        if self.request.method != "PUT":
            return
        if not self.current_user:
            raise web.HTTPError(403)
        if not self.authorizer.is_authorized(self, self.current_user, "write", self.auth_resource):
            raise web.HTTPError(403)
        from yitong_lab.datasets.manifest import check_path

        upload_id, path = self.path_args
        upload = UPLOADS.get(upload_id)
        if upload is None:
            raise web.HTTPError(404, reason=f"no upload {upload_id}")
        try:
            check_path(path)
        except ValueError as error:
            raise web.HTTPError(400, reason=str(error)[:200]) from None
        connection = self.request.connection  # tornado's HTTP1Connection: a streamed body has its own limit
        if connection is not None and hasattr(connection, "set_max_body_size"):
            connection.set_max_body_size(MAX_FILE_BYTES)
        self._target = os.path.join(upload["dir"], *path.split("/"))
        self._temp = f"{self._target}.yt-tmp-{uuid.uuid4().hex[:8]}"
        self._size = 0

        def open_temp() -> Any:
            os.makedirs(os.path.dirname(self._temp), exist_ok=True)
            return open(self._temp, "wb")

        try:
            self._file = await asyncio.get_running_loop().run_in_executor(_POOL, open_temp)
        except OSError as error:
            raise web.HTTPError(409, reason=f"cannot store {path}: {error.strerror}") from None

    async def data_received(self, chunk: bytes) -> None:
        if self._file is not None:
            self._size += len(chunk)
            await asyncio.get_running_loop().run_in_executor(_POOL, self._file.write, chunk)

    async def put(self, upload_id: str, path: str) -> None:
        file, self._file = self._file, None

        def finish() -> None:
            file.close()
            os.replace(self._temp, self._target)

        await asyncio.get_running_loop().run_in_executor(_POOL, finish)
        self.send(201, {"path": path, "size": self._size})

    def on_connection_close(self) -> None:
        if self._file is not None:  # the browser went away mid-file: drop the partial file
            file, self._file = self._file, None
            temp = self._temp

            def drop() -> None:
                file.close()
                if os.path.exists(temp):
                    os.unlink(temp)

            _POOL.submit(drop)
        super().on_connection_close()


upload_handlers = [
    (r"yitong/datasets/uploads", UploadsHandler),
    (r"yitong/datasets/uploads/([0-9a-f]{32})", UploadHandler),
    (r"yitong/datasets/uploads/([0-9a-f]{32})/commit", CommitHandler),
    (r"yitong/datasets/uploads/([0-9a-f]{32})/files/(.+)", FileHandler),
    (r"yitong/tasks/([0-9a-f]{32})", TaskHandler),
]
