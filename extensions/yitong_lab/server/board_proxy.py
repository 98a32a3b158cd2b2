"""``<base_url>yitong/jobs/<id>/tensorboard/<path>``: a job's TensorBoard, proxied to its unix socket.

The board is started by ``yitong/jobs/<id>/tensorboard`` (handlers.py: the platform says the job
is the user's, then :class:`yitong_lab.proxies.tensorboard.JobBoards` starts it and redirects
here). This route only forwards, with jupyter-server-proxy's handler (its login check in
``prepare``, websockets, streaming) pointed at the board's socket, and the full path, as
TensorBoard's ``--path_prefix`` expects (``absolute_url``). No board runs for the job (never
opened, stopped as least recently used, or ended): 404 with the route that starts it.
"""

from __future__ import annotations

from jupyter_server_proxy.handlers import LocalProxyHandler, ProxyHandler

from yitong_lab.proxies.tensorboard import job_board_path


class JobBoardProxyHandler(LocalProxyHandler):
    """The URL's groups are ``(job id, path)`` where LocalProxyHandler's are ``(port, path)``."""

    async def prepare(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        await super().prepare(*args, **kwargs)  # the login first; then the board, before any upgrade
        if self._finished:
            return
        job_id = int(self.path_args[0])
        socket = self.settings["yitong_tensorboards"].socket_of(job_id)  # set by the extension's loader
        if socket is None:
            start = job_board_path(self.base_url, job_id).rstrip("/")
            self.set_status(404)
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(f"no TensorBoard runs for job {job_id} in this server: open {start} to start it\n")
            return
        self.unix_socket = socket
        self.proxy_base = f"yitong/jobs/{job_id}/tensorboard"

    async def proxy(self, job_id: str, proxied_path: str) -> None:  # type: ignore[override]
        return await ProxyHandler.proxy(self, "localhost", 0, proxied_path)

    async def open(self, job_id: str, proxied_path: str) -> None:  # type: ignore[override]
        return await self.proxy_open("localhost", 0, proxied_path)


board_handlers = [(r"yitong/jobs/(\d+)/tensorboard(/.*)", JobBoardProxyHandler, {"absolute_url": True})]
