"""A local notebook server in a cgroup of its own (yitong_spawner/backends.py, core/cgroups.py):
a real server process as a throwaway account (``nobody``) in multi-user mode (root), whose
profile's memory and cpu are its cgroup's limits, and what it left running in a session of its
own without the server's mark (so the marked-process sweep cannot find it) ends with it.

Fails without the cgroup (checked by hand with the account's ``cgroup`` null): the sleeper
outlives the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from pathlib import Path

import pytest
from spawner.platform_standin import GiB, profile, vc
from traitlets.config import Config

from yitong_services.core import cgroups
from yitong_services.jobs import procs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a server as another account needs root (CI runs as root)")
NOBODY = 65534

# the server: a sleeper in a session of its own, double-forked, with an empty environment (no
# YITONG_SERVER_ID); it writes "<its pid> <the sleeper's>" and waits to be stopped
SERVER = r"""
import os, sys, time
out = sys.argv[1]
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        os.execve("/bin/sleep", ["sleep", "600"], {})
    os._exit(0)
os.close(w)
sleeper = os.read(r, 32).decode()
with open(out + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {sleeper}")
os.rename(out + ".tmp", out)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    return procs.state(pid) not in ("Z", "X", None)


@pytest.fixture
def nobody_home():
    base = Path(tempfile.mkdtemp(prefix="yitong-srv-", dir="/var/tmp"))
    base.chmod(0o711)
    home = base / "home"
    home.mkdir(mode=0o700)
    os.chown(home, NOBODY, NOBODY)
    yield home
    for entry in home.iterdir():
        entry.unlink()
    home.rmdir()
    base.rmdir()


@pytest.mark.parametrize("how", ["stopped", "killed"])
async def test_a_server_is_held_to_its_profile_and_ends_whole(make_spawner, platform, nobody_home, how):
    parent = cgroups.parent_name(nobody_home.parent)
    platform.spawn_options["alice"] = [vc("vision", [profile("half", cpu=0.5, memory=GiB)])]
    platform.accounts["alice"] = {
        "name": "nobody",
        "uid": NOBODY,
        "gid": NOBODY,
        "home": str(nobody_home),
        "pid_namespace": False,  # its end would kill the sleeper too: the cgroup alone is tried here
        "cgroup": {"parent": parent, "max_processes": 64},
    }
    out = nobody_home / "pids"
    config = Config({"YitongSpawner": {"cmd": [os.path.realpath(sys.executable), "-c", SERVER, str(out)]}})
    config.YitongLocalProcessSpawner = Config({"leftovers_grace": 1.0})
    spawner = make_spawner("alice", config=config, user_options={"vc": "vision", "profile": "half"})
    await spawner.start()
    server = sleeper = 0
    try:
        for _ in range(600):
            if out.exists():
                break
            await asyncio.sleep(0.1)
        server, sleeper = (int(p) for p in out.read_text().split())
        dirs = spawner.child.cgroup_dirs
        assert dirs and spawner.child.get_state()["cgroup"] == dirs
        assert {server, sleeper} <= cgroups.members(dirs)
        assert cgroups.memory_limit(dirs) == GiB
        layout = cgroups.usable(parent)
        files = cgroups.plan(layout, parent, "x", {"cpu": 0.5, "pids": 64})
        for directory, wanted in zip(dirs, files.values(), strict=True):
            for name, value in wanted.items():
                assert Path(directory, name).read_text().split() == value.split(), (directory, name)
        if how == "killed":
            os.kill(server, 9)  # as the OOM killer would
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
            if not _alive(sleeper):
                break
            await asyncio.sleep(0.1)
        assert not _alive(sleeper), "the server's sleeper outlived it"
        assert not any(os.path.exists(d) for d in dirs), "the server's cgroup was left"
        assert spawner.child.cgroup_dirs == []
    finally:
        for pid in (server, sleeper):
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
        cgroups.remove_parent(cgroups.usable(parent), parent)
