"""YitongSpawner with the local backend: a real jupyterhub-singleuser process, a stand-in platform."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

import httpx
import pytest
from jupyterhub.spawner import SpawnException
from spawner.platform_standin import GiB, profile, vc
from traitlets.config import Config

from yitong_services.jobs import procs

SINGLEUSER = [sys.executable, "-m", "jupyterhub.singleuser"]


def cmd(argv: list[str]) -> Config:
    """`c.YitongSpawner.cmd`: Spawner traits configured on YitongSpawner reach the child."""
    return Config({"YitongSpawner": {"cmd": argv}})


async def wait_http(url: str, timeout: float = 60) -> httpx.Response:
    deadline = asyncio.get_running_loop().time() + timeout
    async with httpx.AsyncClient() as client:
        while True:
            try:
                r = await client.get(url)
                if r.status_code < 500:
                    return r
            except httpx.HTTPError:
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(url)
            await asyncio.sleep(0.3)


@pytest.fixture
def vision(platform):
    platform.spawn_options["alice"] = [
        vc(
            "vision",
            [profile("cpu-small"), profile("gpu-2", accelerator={"type": "nvidia.com/gpu", "count": 2})],
            description="Vision team",
        ),
    ]


async def test_the_server_sees_the_devices_the_platform_placed_it_on(make_spawner, platform, vision):
    """The platform picks the indices (vcs/placement.py); the child's environment names them."""
    platform.placed = [2, 3]
    spawner = make_spawner("alice", config=cmd(SINGLEUSER), user_options={"vc": "vision", "profile": "gpu-2"})
    await spawner.start()
    try:
        env = spawner.child.get_env()
        assert env["CUDA_VISIBLE_DEVICES"] == "2,3" and env["ASCEND_RT_VISIBLE_DEVICES"] == ""
    finally:
        await spawner.stop()


async def test_local_start_poll_stop(make_spawner, platform, vision):
    spawner = make_spawner("alice", config=cmd(SINGLEUSER), user_options={"vc": "vision", "profile": "gpu-2"})
    ip, port = await spawner.start()
    try:
        r = await wait_http(f"http://{ip}:{port}/user/alice/api")
        assert r.status_code == 200 and "version" in r.json()
        assert await spawner.poll() is None
        env = spawner.child.get_env()
        assert env["YITONG_API_URL"] == platform.url
        assert (env["YITONG_VC"], env["YITONG_PROFILE"]) == ("vision", "gpu-2")
        assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
        assert env["ASCEND_RT_VISIBLE_DEVICES"] == ""
        assert env["HOME"] == os.path.join(spawner.data_dir, "home", "alice")
        assert env["MEM_LIMIT"] == str(2 * GiB)
        [allocation] = platform.allocations.values()
        assert allocation["ref"] == "alice/" and allocation["kind"] == "server"
        state = spawner.get_state()
        assert state["allocation"]["id"] == allocation["id"] and state["child_state"]["pid"]
        assert state["vc"] == "vision" and state["home_dir"].endswith("/home/alice")
    finally:
        await spawner.stop()
    assert await spawner.poll() is not None
    assert platform.released == [allocation["id"]] and not platform.allocations


async def test_state_survives_hub_restart(make_spawner, platform, vision):
    """A second spawner loading the first's state tracks the same process and releases on stop."""
    config = cmd([sys.executable, "-c", "import time; time.sleep(60)"])
    # the process is this test's child: after a signal it stays a zombie (kill -0 succeeds) until
    # `first` reaps it, so keep the graceful-stop waits short
    config.LocalProcessSpawner.update(interrupt_timeout=1, term_timeout=1, kill_timeout=1)
    first = make_spawner("alice", config=config)
    await first.start()
    state = first.get_state()
    second = make_spawner("bob", config=config)  # any spawner object; load_state is what matters
    second.load_state(state)
    assert second.child.pid == first.child.pid
    assert await second.poll() is None
    await second.stop()
    assert await first.poll() is not None
    assert platform.released == [state["allocation"]["id"]]


async def test_failed_child_start_releases(make_spawner, platform, vision):
    spawner = make_spawner("alice", config=cmd(["/nonexistent/jupyterhub-singleuser"]))
    with pytest.raises(FileNotFoundError):
        await spawner.start()
    assert platform.released == [1] and not platform.allocations


async def test_server_gone_poll_releases(make_spawner, platform, vision):
    spawner = make_spawner("alice", config=cmd([sys.executable, "-c", "pass"]))
    await spawner.start()
    for _ in range(600):  # up to a minute for an interpreter to start and exit on a loaded machine
        if await spawner.poll() is not None:
            break
        await asyncio.sleep(0.1)
    assert platform.released == [1]


@pytest.mark.parametrize(
    "refusal",
    [
        (409, "VC vision: 2 of 2 nvidia.com/gpu in use"),
        (403, "alice is not a member of VC vision"),
        (422, "profile gpu-2 is not offered by VC vision"),
        (409, "this cluster has no huawei.com/Ascend910"),
    ],
)
async def test_platform_refusal_is_shown(make_spawner, platform, vision, refusal):
    platform.refusals[("vision", "gpu-2")] = refusal
    spawner = make_spawner("alice", config=cmd(SINGLEUSER), user_options={"vc": "vision", "profile": "gpu-2"})
    with pytest.raises(SpawnException) as info:
        await spawner.start()
    assert info.value.status_code == refusal[0]
    assert info.value.message == refusal[1]
    assert spawner.child is None and await spawner.poll() == 0


@pytest.mark.parametrize(
    "options, message",
    [
        ({"image": "evil"}, "Unknown server option(s): image. Allowed: vc, profile, custom."),
        ({"vc": "gone", "profile": "cpu-small"}, "VC gone does not exist or you are not a member of it."),
        ({"vc": "vision", "profile": "removed"}, "Profile removed is not offered by VC vision."),
    ],
)
async def test_bad_options_refused(make_spawner, platform, vision, options, message):
    spawner = make_spawner("alice", config=cmd(SINGLEUSER), user_options=options)
    with pytest.raises(SpawnException) as info:
        await spawner.start()
    assert (info.value.status_code, info.value.message) == (400, message)
    assert not platform.allocations


async def test_platform_unreachable(make_spawner, platform, vision):
    spawner = make_spawner("alice", platform_api_url="http://127.0.0.1:9/api")
    with pytest.raises(SpawnException) as info:
        await spawner.start()
    assert info.value.status_code == 503
    assert "not reachable" in info.value.message


async def test_release_with_the_service_down_is_a_warning_not_an_error(make_spawner, caplog):
    """Ctrl-C on `make run`: the service stops before the hub's servers; the allocation is not
    lost (the service's reconciler drops it at its next start), so nothing is logged as an error."""
    spawner = make_spawner("alice", platform_api_url="http://127.0.0.1:9/api")
    spawner.allocation = {"id": 7, "vc": "vision", "profile": "cpu-small"}
    spawner.log.propagate = True
    with caplog.at_level("INFO"):
        await spawner.release()
    assert spawner.allocation is None
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert any("Allocation 7" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


# A "server" that starts what a real one does: a child in a session of its own (as jupyter_client
# starts a kernel), one that ignores SIGTERM, and one in its own process group that says it is not
# the server's (another server's mark: it must survive); then it waits to be killed.
LEAVER = r"""
import os, signal, subprocess, sys, time
out = sys.argv[1]
kernel = "import time; time.sleep(600)"
stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
pids = [
    subprocess.Popen([sys.executable, "-c", kernel], start_new_session=True).pid,
    subprocess.Popen([sys.executable, "-c", stubborn], start_new_session=True).pid,
    subprocess.Popen(
        [sys.executable, "-c", kernel], start_new_session=True, env={**os.environ, "YITONG_SERVER_ID": "another"}
    ).pid,
]
time.sleep(1)  # the children have set their signals
with open(out + ".tmp", "w") as f:
    f.write(" ".join(map(str, [os.getpid(), *pids])))
os.rename(out + ".tmp", out)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    return procs.state(pid) not in ("Z", "X", None)


async def _started_tree(spawner, out) -> list[int]:
    await spawner.start()
    for _ in range(600):  # a minute for four interpreters on a loaded machine
        if out.exists():
            return [int(p) for p in out.read_text().split()]
        await asyncio.sleep(0.1)
    raise TimeoutError("the server did not start its children")


@pytest.mark.parametrize("how", ["killed", "stopped"])
async def test_what_an_ended_server_started_is_stopped_but_nothing_else(make_spawner, platform, vision, tmp_path, how):
    """yitong_spawner/leftovers.py: the processes a server started in sessions of their own (its
    kernels) outlive it, whether it is killed (SIGKILL, the OOM killer: the hub's poll sees it gone)
    or stopped by the hub (which signals the server's pid only). Once it has ended they are stopped,
    SIGKILL for one that ignores SIGTERM, and a process carrying another server's mark is spared."""
    out = tmp_path / "pids"
    config = cmd([sys.executable, "-c", LEAVER, str(out)])
    config.YitongLocalProcessSpawner = Config({"leftovers_grace": 1.0})
    spawner = make_spawner("alice", config=config)
    server, kernel, stubborn, other = await _started_tree(spawner, out)
    try:
        assert spawner.child.server_mark and spawner.child.get_state()["server_mark"] == spawner.child.server_mark
        if how == "killed":
            os.kill(server, 9)
            for _ in range(600):
                if await spawner.poll() is not None:
                    break
                await asyncio.sleep(0.1)
        else:
            await spawner.stop()
        task = spawner.child.leftovers_task
        assert task is not None, "the server's end did not start a stop of what it left"
        await asyncio.wait_for(task, 60)
        for _ in range(100):  # a killed process is reaped by init a moment later
            if not _alive(kernel) and not _alive(stubborn):
                break
            await asyncio.sleep(0.1)
        assert not _alive(kernel), "the server's kernel outlived it"
        assert not _alive(stubborn), "the child that ignores SIGTERM was not killed after the grace"
        assert _alive(other), "a process with another server's mark was stopped"
        assert spawner.child.server_mark == "" and platform.released == [1]
    finally:
        for pid in (server, kernel, stubborn, other):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
