"""Shared test helpers for every Yitong distribution (`from helpers import require, free_port`).

Fixtures and helpers:

- ``require(what, ok, why)``: skip a test when a system service (Slurm, PostgreSQL, Chromium)
  is missing on a developer's machine, but *fail* it under CI (``CI=true``) or when
  ``YITONG_REQUIRE_ALL=1``: a run that skips what it cannot reach is not a pass.
- ``free_port()``: an unused TCP port on 127.0.0.1.
- ``served(app, port)``: an app whose lifespan a fixture already ran, on a real socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest


def strict() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"} or os.environ.get("YITONG_REQUIRE_ALL") == "1"


def require(what: str, ok: bool, why: str = "") -> None:
    """Skip (developer machine) or fail (CI) when a needed system service is absent."""
    if ok:
        return
    message = f"{what} is not available{': ' + why if why else ''}"
    if strict():
        pytest.fail(message + " (CI must provide it: see .ci/run)", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.asynccontextmanager
async def served(app, port: int | None = None) -> AsyncIterator[int]:
    """Serve ``app`` on 127.0.0.1 (uvicorn, this event loop) while the block runs; yields the port.
    The lifespan stays off: the fixture that built the app started it, and a second startup would
    start a second job manager that nothing stops, left running on a database later tests share."""
    import uvicorn

    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning"))
    serving = asyncio.ensure_future(server.serve())
    while not server.started:
        if serving.done():
            serving.result()  # it could not listen: say why
        await asyncio.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        await serving


def yt_as(monkeypatch, base: str, token: str) -> dict[str, str]:
    """``yt``/SDK calls in this test process act as the owner of ``token`` against the service at
    ``base`` (and not as a job: the job variables are dropped); the variables, for subprocesses."""
    monkeypatch.delenv("YITONG_API_URL", raising=False)
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    env = {"YT_API_URL": base.rstrip("/"), "YT_TOKEN": token}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def run_in_kernel(env: dict, code: str, cwd=None, timeout: float = 60) -> str:
    """Run ``code`` in a fresh ``yitong-python3`` kernel; its stream output and tracebacks as text."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="yitong-python3", env=env, **({"cwd": str(cwd)} if cwd else {}))
    try:
        out: list[str] = []

        def collect(msg):
            if msg["header"]["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["header"]["msg_type"] == "error":
                out.append("\n".join(msg["content"]["traceback"]))

        reply = kc.execute_interactive(code, output_hook=collect, timeout=timeout)
        assert reply["content"]["status"] == "ok", out
        return "".join(out)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def start_service(
    python,
    settings: os.PathLike,
    data: os.PathLike,
    port: int,
    hub,
    log: os.PathLike,
    prefix: str = "/services/yitong/",
    timeout: float = 90,
):
    """The platform service as a real process (``python -m yitong_services.core.app``) registered
    with ``hub``; returns the ``Popen`` once ``/health`` answers (its log's tail on failure)."""
    import subprocess
    import time
    from pathlib import Path

    import httpx

    env = os.environ | {
        "JUPYTERHUB_API_URL": hub.api_url,
        "JUPYTERHUB_API_TOKEN": hub.service_token,
        "JUPYTERHUB_SERVICE_PREFIX": prefix,
    }
    with Path(log).open("a") as out:
        proc = subprocess.Popen(
            [
                str(python),
                "-m",
                "yitong_services.core.app",
                "--settings",
                str(settings),
                "--data-dir",
                str(data),
                "--port",
                str(port),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    health = f"http://127.0.0.1:{port}{prefix}api/v1/health"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, Path(log).read_text()[-3000:]
        try:
            if httpx.get(health, timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(Path(log).read_text()[-3000:])


def ipython(*lines: str, cwd=None, drop: tuple[str, ...] = (), **env: str):
    """Run ``lines`` in a real (terminal) IPython with the extension loaded; ``drop`` names
    variables of this process's environment the run must not see."""
    import subprocess
    import sys

    argv = [
        sys.executable,
        "-m",
        "IPython",
        "--no-banner",
        "--quick",
        "--colors=nocolor",
        "--ext=yitong_lab",
        "-c",
        "\n".join(lines),
    ]
    environ = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.run(argv, capture_output=True, text=True, env={**environ, **env}, timeout=60, cwd=cwd)


@contextlib.contextmanager
def tmpfs_disk(where: Path, size: str, mode: str = "0755") -> Iterator[Path]:
    """A tmpfs of ``size`` (``8m``) mounted on the new folder ``where``, for a disk that fills up
    for real (ENOSPC); unmounted at the end. Needs root: CI runs as root."""
    require("root", os.geteuid() == 0, "mounting a small filesystem needs root (CI runs as root)")
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode={mode}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(path) -> None:
    """Write ``path`` until the disk takes nothing more (unbuffered: the last pages too)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for block in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * block)
    finally:
        os.close(fd)
