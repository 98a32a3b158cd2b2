"""TensorBoard behind ``<base_url>tensorboard/``, and one TensorBoard per job.

TensorBoard builds absolute links from ``--path_prefix``, so the proxy passes the absolute
URL (``absolute_url: True``) and the prefix is ``{base_url}tensorboard``. It listens on a unix
socket in the server's 0700 folder (:mod:`yitong_lab.proxies.tensorboard_socket`, TensorBoard's
own app on another server class), never on a TCP port, so only the server's proxy (behind the
hub's login) reaches it. Settings: ``YITONG_TB_LOGDIR`` (default: home). Not installed in this
server's Python: the path answers 503 with a sentence (:mod:`yitong_lab.proxies.absent`), the
launcher card is hidden.

Per job (:class:`JobBoards`, used by the server extension's ``yitong/jobs/<id>/tensorboard``
route): one TensorBoard on the job's outputs, on a socket of its own in the same folder, with
``--path_prefix <base_url>yitong/jobs/<id>/tensorboard``; the server extension proxies
``yitong/jobs/<id>/tensorboard/...`` to that socket (``yitong_lab.server.board_proxy``), behind
the same login as the server. One process per job, reused; at most :attr:`JobBoards.limit`, the
least recently used stopped first; all stopped at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import secrets
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from yitong_lab.proxies import ICONS, escape_template, socket_path
from yitong_lab.proxies.absent import absent_command

NAME = "tensorboard"
LAUNCHER = "yitong_lab.proxies.tensorboard_socket"


def installed() -> bool:
    """Whether this server's Python can import TensorBoard (the launcher runs it in-process)."""
    return importlib.util.find_spec("tensorboard") is not None


def tensorboard_command(logdir: str, python: str = sys.executable) -> list[str]:
    return [
        python,
        "-m",
        LAUNCHER,
        "--socket",
        "{unix_socket}",
        "--logdir",
        escape_template(logdir),
        "--path_prefix",
        "{base_url}" + NAME,
        "--reload_interval",
        "15",
    ]


NOT_INSTALLED = (
    "TensorBoard is not installed in this server's environment (pip install tensorboard, then restart the server)."
)


def setup_tensorboard() -> dict[str, Any]:
    present = installed()
    logdir = os.path.expanduser(os.environ.get("YITONG_TB_LOGDIR") or "~")
    command = tensorboard_command(logdir) if present else absent_command(NOT_INSTALLED)
    return {
        "command": command,
        "unix_socket": socket_path(NAME),
        "absolute_url": True,
        "timeout": 60,
        "new_browser_tab": True,
        "launcher_entry": {
            "enabled": present,
            "title": "TensorBoard",
            "path_info": NAME + "/",
            "icon_path": str(ICONS / "tensorboard.svg"),
            "category": "Other",
        },
    }


# -- one TensorBoard per job -------------------------------------------------------------------


def board_launcher(python: str = sys.executable) -> list[str] | None:
    """The argv prefix that starts a job's TensorBoard; ``None`` when it is not installed."""
    return [python, "-m", LAUNCHER] if installed() else None


def job_board_command(launcher: list[str], logdir: str, socket: str, base_url: str, job_id: int) -> list[str]:
    """The argv of a job's TensorBoard (no shell, no proxy templating)."""
    return [
        *launcher,
        "--socket",
        socket,
        "--logdir",
        logdir,
        "--path_prefix",
        job_board_path(base_url, job_id).rstrip("/"),
        "--reload_interval",
        "15",
    ]


def job_board_path(base_url: str, job_id: int) -> str:
    """``<base_url>yitong/jobs/<id>/tensorboard/``: where the server extension proxies the board."""
    return f"/{base_url.strip('/')}/yitong/jobs/{job_id}/tensorboard/".replace("//", "/")


class BoardError(Exception):
    """TensorBoard could not be started (``status``: 501 not installed, 500 it failed)."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status


@dataclass
class Board:
    logdir: str
    socket: str
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

    def __init__(self, base_url: str, launcher: list[str] | None = None):
        self.base_url = base_url
        self.launcher = launcher
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
                board = await self._start(job_id, logdir)
                self.boards[job_id] = board
            board.used = time.monotonic()
            return job_board_path(self.base_url, job_id)

    def socket_of(self, job_id: int) -> str | None:
        """The socket of the job's running TensorBoard (``None``: none runs)."""
        board = self.boards.get(job_id)
        if board is None or not board.alive():
            return None
        board.used = time.monotonic()
        return board.socket

    async def _start(self, job_id: int, logdir: str) -> Board:
        launcher = self.launcher or board_launcher()
        if launcher is None:
            raise BoardError(
                501,
                "TensorBoard is not installed in this server's environment "
                "(pip install tensorboard, then open this page again)",
            )
        socket = socket_path(f"tensorboard-job-{job_id}-{secrets.token_hex(4)}")  # a fresh one each start
        log = tempfile.TemporaryFile()
        process = await asyncio.create_subprocess_exec(
            *job_board_command(launcher, logdir, socket, self.base_url, job_id),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        _PIDS.add(process.pid)
        board = Board(logdir, socket, process, log)
        if await self._ready(board):
            return board
        last = self._tail(board)
        await self._terminate(board)
        raise BoardError(500, f"TensorBoard did not start: {last or 'no output'}")

    async def _ready(self, board: Board) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline and board.alive():
            try:
                _reader, writer = await asyncio.open_unix_connection(board.socket)
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
        try:
            os.unlink(board.socket)
        except FileNotFoundError:
            pass

    async def stop_all(self) -> None:
        async with self._lock:
            for job_id in list(self.boards):
                await self._stop(job_id)
