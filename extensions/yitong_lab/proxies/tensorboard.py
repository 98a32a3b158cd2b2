"""TensorBoard behind ``<base_url>tensorboard/``, and one TensorBoard per job.

TensorBoard builds absolute links from ``--path_prefix``, so the proxy passes the absolute
URL (``absolute_url: True``) and the prefix is ``{base_url}tensorboard``. It listens on
127.0.0.1 only (``--host``; ``--bind_all`` is a plain on/off switch and stays off).
Settings: ``YITONG_TB_LOGDIR`` (default: home). Not installed: the path answers 503 with a
sentence (:mod:`yitong_lab.proxies.absent`), the launcher card is hidden.

Per job (:class:`JobBoards`, used by the server extension's ``yitong/jobs/<id>/tensorboard``
route): ``tensorboard --logdir <the job's outputs> --port <free> --path_prefix
<base_url>proxy/absolute/<port>`` on 127.0.0.1, reached through jupyter-server-proxy's
``proxy/absolute/<port>/`` (which passes the full path, as ``--path_prefix`` expects, and
needs the same login as the server). One process per job, reused; at most
:attr:`JobBoards.limit`, the least recently used stopped first; all stopped at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yitong_lab.proxies import ICONS, escape_template
from yitong_lab.proxies.absent import absent_command

NAME = "tensorboard"


def tensorboard_command(executable: str, logdir: str) -> list[str]:
    return [
        executable,
        "--logdir",
        escape_template(logdir),
        "--port",
        "{port}",
        "--host",
        "127.0.0.1",
        "--path_prefix",
        "{base_url}" + NAME,
        "--reload_interval",
        "15",
    ]


NOT_INSTALLED = (
    "TensorBoard is not installed in this server's environment (pip install tensorboard, then restart the server)."
)


def setup_tensorboard() -> dict[str, Any]:
    executable = shutil.which("tensorboard")
    logdir = os.path.expanduser(os.environ.get("YITONG_TB_LOGDIR") or "~")
    command = tensorboard_command(executable, logdir) if executable else absent_command(NOT_INSTALLED)
    return {
        "command": command,
        "absolute_url": True,
        "timeout": 60,
        "new_browser_tab": True,
        "launcher_entry": {
            "enabled": executable is not None,
            "title": "TensorBoard",
            "path_info": NAME + "/",
            "icon_path": str(ICONS / "tensorboard.svg"),
            "category": "Other",
        },
    }


# -- one TensorBoard per job -------------------------------------------------------------------


def find_tensorboard() -> str | None:
    """``tensorboard`` on PATH, else next to this Python (a venv not on PATH)."""
    found = shutil.which("tensorboard")
    if found:
        return found
    beside = Path(sys.executable).with_name("tensorboard")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def job_board_command(executable: str, logdir: str, port: int, base_url: str) -> list[str]:
    """The argv of a job's TensorBoard (no shell, no proxy templating)."""
    return [
        executable,
        "--logdir",
        logdir,
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--path_prefix",
        job_board_path(base_url, port).rstrip("/"),
        "--reload_interval",
        "15",
    ]


def job_board_path(base_url: str, port: int) -> str:
    """``<base_url>proxy/absolute/<port>/``: where jupyter-server-proxy serves that port."""
    return f"/{base_url.strip('/')}/proxy/absolute/{port}/".replace("//", "/")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BoardError(Exception):
    """TensorBoard could not be started (``status``: 501 not installed, 500 it failed)."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status


@dataclass
class Board:
    logdir: str
    port: int
    process: Any
    log: Any
    used: float = field(default_factory=time.monotonic)

    def alive(self) -> bool:
        return self.process.returncode is None


_PIDS: set[int] = set()


@atexit.register
def _stop_leftovers() -> None:
    for pid in list(_PIDS):
        _kill_group(pid, signal.SIGTERM)


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class JobBoards:
    """The TensorBoards of this server, one per job id (see module doc)."""

    limit = 8
    startup_timeout = 60.0

    def __init__(self, base_url: str, executable: str | None = None):
        self.base_url = base_url
        self.executable = executable
        self.boards: dict[int, Board] = {}
        self._lock = asyncio.Lock()

    async def url(self, job_id: int, logdir: str) -> str:
        """Start (or reuse) the job's TensorBoard; returns its path under the server."""
        async with self._lock:
            board = self.boards.get(job_id)
            if board is not None and (not board.alive() or board.logdir != logdir):
                await self._stop(job_id)
                board = None
            if board is None:
                await self._make_room()
                board = await self._start(logdir)
                self.boards[job_id] = board
            board.used = time.monotonic()
            return job_board_path(self.base_url, board.port)

    async def _start(self, logdir: str) -> Board:
        executable = self.executable or find_tensorboard()
        if executable is None:
            raise BoardError(
                501,
                "TensorBoard is not installed in this server's environment "
                "(pip install tensorboard, then open this page again)",
            )
        last = ""
        for _ in range(3):  # a port taken between choosing and binding: try another
            port = free_port()
            log = tempfile.TemporaryFile()
            process = await asyncio.create_subprocess_exec(
                *job_board_command(executable, logdir, port, self.base_url),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
            _PIDS.add(process.pid)
            board = Board(logdir, port, process, log)
            if await self._ready(board):
                return board
            last = self._tail(board)
            await self._terminate(board)
        raise BoardError(500, f"TensorBoard did not start: {last or 'no output'}")

    async def _ready(self, board: Board) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline and board.alive():
            try:
                _reader, writer = await asyncio.open_connection("127.0.0.1", board.port)
            except OSError:
                await asyncio.sleep(0.2)
                continue
            writer.close()
            return True
        return False

    @staticmethod
    def _tail(board: Board) -> str:
        board.log.seek(0)
        lines = board.log.read().decode(errors="replace").strip().splitlines()
        return " / ".join(lines[-3:])

    async def _make_room(self) -> None:
        while len(self.boards) >= self.limit:
            oldest = min(self.boards, key=lambda job: self.boards[job].used)
            await self._stop(oldest)

    async def _stop(self, job_id: int) -> None:
        board = self.boards.pop(job_id, None)
        if board is not None:
            await self._terminate(board)

    @staticmethod
    async def _terminate(board: Board) -> None:
        _kill_group(board.process.pid, signal.SIGTERM)  # the group: its data server too
        if board.alive():
            try:
                await asyncio.wait_for(board.process.wait(), 10)
            except TimeoutError:
                _kill_group(board.process.pid, signal.SIGKILL)
                await board.process.wait()
        _PIDS.discard(board.process.pid)
        board.log.close()

    async def stop_all(self) -> None:
        async with self._lock:
            for job_id in list(self.boards):
                await self._stop(job_id)
