"""TensorBoard on a job's outputs: the server extension's ``yitong/jobs/<id>/tensorboard`` route in a
real Jupyter server (pytest-jupyter) with jupyter-server-proxy, a real TensorBoard process (on a
unix socket, ``yitong_lab.proxies.tensorboard_socket``) and an event file written by
``torch.utils.tensorboard.SummaryWriter``; the job comes from the stand-in platform API (conftest)."""

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest
import pytest_jupyter.jupyter_server as _pj
from tornado.httpclient import HTTPClientError

from yitong_lab import proxies
from yitong_lab.proxies import tensorboard as tb

globals().update(
    {
        name: value
        for name, value in vars(_pj).items()
        if type(value).__name__ == "FixtureFunctionDefinition" and name != "jp_asyncio_loop"
    }
)

HAVE_TENSORBOARD = tb.installed()


@pytest.fixture
async def jp_asyncio_loop():
    yield asyncio.get_running_loop()


@pytest.fixture
def jp_base_url():
    return "/user/alice/"  # as JupyterHub names a user's server


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"yitong_lab": True, "jupyter_server_proxy": True}}}


@pytest.fixture
async def boards(jp_serverapp):
    boards = jp_serverapp.web_app.settings["yitong_tensorboards"]
    yield boards
    await boards.stop_all()


@pytest.fixture
def outputs(tmp_path):
    """A job's outputs directory with a real event file (scalar ``loss``, 5 steps)."""
    out = tmp_path / "jobs" / "1" / "outputs"
    if not HAVE_TENSORBOARD:  # SummaryWriter needs the tensorboard package; the real test requires it
        out.mkdir(parents=True)
        return out
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(out / "tb"))
    for step in range(5):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.close()
    return out


def test_command_builders():
    assert tb.job_board_path("/user/alice/", 12) == "/user/alice/yitong/jobs/12/tensorboard/"
    assert tb.job_board_path("/", 12) == "/yitong/jobs/12/tensorboard/"
    assert tb.board_launcher("/py") == (
        ["/py", "-m", "yitong_lab.proxies.tensorboard_socket"] if HAVE_TENSORBOARD else None
    )
    assert tb.job_board_command(["/py", "-m", "tbs"], "/srv/jobs/1/outputs", "/tmp/s/tb.sock", "/user/alice/", 12) == [
        "/py",
        "-m",
        "tbs",
        "--socket",
        "/tmp/s/tb.sock",
        "--logdir",
        "/srv/jobs/1/outputs",
        "--path_prefix",
        "/user/alice/yitong/jobs/12/tensorboard",
        "--reload_interval",
        "15",
    ]


async def test_route_starts_tensorboard_behind_the_proxy(
    yt_env, jp_fetch, http_server_client, jp_auth_header, boards, outputs
):
    from helpers import require

    require("tensorboard", HAVE_TENSORBOARD, "pip install -r requirements-dev.txt")
    job = yt_env.jobs.add(state="running", _outputs=str(outputs))
    response = await jp_fetch(
        "yitong", "jobs", str(job["id"]), "tensorboard", follow_redirects=False, raise_error=False
    )
    assert response.code == 302
    location = response.headers["Location"]
    assert location == f"/user/alice/yitong/jobs/{job['id']}/tensorboard/"
    socket = Path(boards.boards[job["id"]].socket)  # a unix socket only this server's account opens
    assert socket.parent == proxies.private_dir() and stat.S_ISSOCK(socket.stat().st_mode)
    assert stat.S_IMODE(socket.stat().st_mode) == 0o600 and stat.S_IMODE(socket.parent.stat().st_mode) == 0o700
    assert yt_env.requests[-1][:3] == ("GET", f"/services/yitong/api/v1/jobs/{job['id']}", "token alice-token")

    page = await http_server_client.fetch(location, headers=jp_auth_header)  # TensorBoard, through the proxy
    assert page.code == 200 and b"<tb-webapp>" in page.body
    scalars, points = {}, []
    for _ in range(150):  # TensorBoard loads the event files in the background, maybe a part at a time
        reply = await http_server_client.fetch(f"{location}data/plugin/scalars/tags", headers=jp_auth_header)
        scalars = json.loads(reply.body)
        if scalars:
            reply = await http_server_client.fetch(
                f"{location}data/plugin/scalars/scalars?run=tb&tag=loss", headers=jp_auth_header
            )
            points = [point[1] for point in json.loads(reply.body)]
            if len(points) >= 5:
                break
        await asyncio.sleep(0.2)
    assert list(scalars) == ["tb"] and list(scalars["tb"]) == ["loss"]
    assert points == [0, 1, 2, 3, 4]

    again = await jp_fetch("yitong", "jobs", str(job["id"]), "tensorboard", follow_redirects=False, raise_error=False)
    assert again.headers["Location"] == location  # one TensorBoard per job, reused

    with pytest.raises(HTTPClientError) as info:  # the proxy needs the server's login too
        await http_server_client.fetch(location, headers={"Authorization": ""}, follow_redirects=False)
    assert info.value.code in (302, 403)

    with pytest.raises(HTTPClientError) as info:  # a job whose board is not running: where to start it
        await http_server_client.fetch("/user/alice/yitong/jobs/999/tensorboard/", headers=jp_auth_header)
    assert info.value.code == 404
    assert b"no TensorBoard runs for job 999 in this server: open /user/alice/yitong/jobs/999/tensorboard" in (
        info.value.response.body
    )


async def test_route_refusals(yt_env, jp_fetch, boards, outputs, tmp_path, monkeypatch):
    job = yt_env.jobs.add(state="running", _outputs=str(outputs))
    with pytest.raises(HTTPClientError) as info:  # the user's token cannot see it: the platform's 404
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "bob-token")
        await jp_fetch("yitong", "jobs", str(job["id"]), "tensorboard", follow_redirects=False)
    assert (info.value.code, json.loads(info.value.response.body)) == (404, {"detail": f"there is no job {job['id']}"})
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "alice-token")

    queued = yt_env.jobs.add(_outputs=str(tmp_path / "jobs" / "9" / "outputs"))
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("yitong", "jobs", str(queued["id"]), "tensorboard", follow_redirects=False)
    assert info.value.code == 409
    assert json.loads(info.value.response.body)["detail"] == (
        f"job {queued['id']} (queued) has no outputs directory at {tmp_path}/jobs/9/outputs "
        "that this server can see yet"
    )

    monkeypatch.setattr(tb, "board_launcher", lambda: None)
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("yitong", "jobs", str(job["id"]), "tensorboard", follow_redirects=False)
    assert info.value.code == 501
    assert "TensorBoard is not installed" in json.loads(info.value.response.body)["detail"]
    assert boards.boards == {}


async def test_board_limit_and_restart(tmp_path, outputs):
    """Least recently used boards stop first; a board whose process died is started again."""
    fake = tmp_path / "fake-tensorboard.py"
    fake.write_text(
        "import socket, sys, time\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        's.bind(sys.argv[sys.argv.index("--socket") + 1])\n'
        "s.listen()\n"
        "time.sleep(60)\n"
    )
    boards = tb.JobBoards("/user/alice/", launcher=[sys.executable, str(fake)])
    boards.limit = 2
    try:
        first = await boards.url(1, str(outputs))
        await boards.url(2, str(outputs))
        assert await boards.url(1, str(outputs)) == first  # reused, and now the most recent
        await boards.url(3, str(outputs))
        assert sorted(boards.boards) == [1, 3]
        old = boards.boards[1]
        old.process.kill()
        await old.process.wait()
        assert boards.socket_of(1) is None
        assert await boards.url(1, str(outputs)) == first  # the same path, a new process and socket
        assert boards.boards[1].socket != old.socket and boards.socket_of(1) == boards.boards[1].socket
        sockets = [board.socket for board in boards.boards.values()]
    finally:
        await boards.stop_all()
    assert boards.boards == {} and not tb._PIDS
    assert not any(os.path.exists(socket) for socket in sockets)  # removed with their boards


async def test_board_that_fails_to_start(tmp_path, outputs):
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho 'E0101 no such flag --path_prefix' >&2\nexit 2\n")
    broken.chmod(0o755)
    boards = tb.JobBoards("/", launcher=[str(broken)])
    with pytest.raises(tb.BoardError) as info:
        await boards.url(1, str(outputs))
    assert info.value.status == 500 and "no such flag --path_prefix" in str(info.value)
