"""Slurm backend through a real JupyterHub subprocess: sbatch -> batchspawner-singleuser -> scancel.

A real hub is needed because batchspawner-singleuser reports its port to the hub's
`/hub/api/batchspawner` handler (registered by importing batchspawner in the hub config). The
platform service is the stand-in (platform_standin.py), served from this test's event loop.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import textwrap

import httpx
import pytest
from helpers import free_port, require
from spawner.platform_standin import profile, vc

VENV_BIN = os.path.dirname(sys.executable)
CHP = os.path.join(os.path.dirname(__file__), "..", "..", "node_modules", ".bin", "configurable-http-proxy")


def slurm_works() -> bool:
    if not shutil.which("sinfo"):
        return False
    r = subprocess.run(["sinfo", "-h", "-o", "%a %t"], capture_output=True, text=True, timeout=20)
    return r.returncode == 0 and any(s in r.stdout for s in ("idle", "mix", "alloc"))


def squeue(job_id: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout.strip()


HUB_CONFIG = """
import batchspawner  # noqa: F401  registers /hub/api/batchspawner, which batchspawner-singleuser calls
c = get_config()  # noqa
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {proxy_port}
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.JupyterHub.db_url = "sqlite:///{tmp}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{tmp}/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.spawner_class = "yitong"
c.JupyterHub.services = [{{"name": "tester", "api_token": "tester-token-0123456789"}}]
c.JupyterHub.load_roles = [{{"name": "tester", "scopes": ["admin:users", "admin:servers"], "services": ["tester"]}}]
c.YitongSpawner.backend = "slurm"
c.YitongSpawner.platform_api_url = {platform_url!r}
c.YitongSpawner.platform_api_token = {platform_token!r}
c.YitongSpawner.data_dir = "{tmp}/data"
c.YitongSpawner.slurm_partition = "debug"
c.YitongSpawner.cmd = [{singleuser!r}]
c.YitongSpawner.http_timeout = 60
c.YitongSlurmSpawner.batchspawner_singleuser_cmd = {bs_singleuser!r}
c.YitongSlurmSpawner.startup_poll_interval = 0.5
"""


@pytest.fixture
async def hub(platform, tmp_path):
    ports = {k: free_port() for k in ("proxy_port", "hub_port", "proxy_api_port")}
    config = tmp_path / "jupyterhub_config.py"
    config.write_text(
        textwrap.dedent(
            HUB_CONFIG.format(
                **ports,
                chp=os.path.abspath(CHP),
                tmp=tmp_path,
                platform_url=platform.url,
                platform_token=platform.token,
                singleuser=os.path.join(VENV_BIN, "jupyterhub-singleuser"),
                bs_singleuser=os.path.join(VENV_BIN, "batchspawner-singleuser"),
            )
        )
    )
    log = open(tmp_path / "hub.log", "w")
    proc = await asyncio.create_subprocess_exec(
        os.path.join(VENV_BIN, "jupyterhub"),
        "-f",
        str(config),
        cwd=tmp_path,
        stdout=log,
        stderr=log,
        env={**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ["PATH"]},
    )
    api = f"http://127.0.0.1:{ports['hub_port']}/hub/api"
    client = httpx.AsyncClient(base_url=api, headers={"Authorization": "token tester-token-0123456789"}, timeout=30)
    for _ in range(120):
        try:
            if (await client.get("/")).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.returncode is not None:
            break
        await asyncio.sleep(0.25)
    else:
        pytest.fail("hub did not start: " + (tmp_path / "hub.log").read_text()[-3000:])
    client.proxy_url = f"http://127.0.0.1:{ports['proxy_port']}"
    client.log_path = tmp_path / "hub.log"
    yield client
    await client.aclose()
    proc.terminate()
    await proc.wait()
    log.close()


async def wait_server(client, name: str, ready: bool, timeout: float = 120) -> dict:
    for _ in range(int(timeout * 2)):
        model = (await client.get(f"/users/{name}")).json()
        server = model["servers"].get("")
        if bool(server and server["ready"]) if ready else not server:
            return model
        await asyncio.sleep(0.5)
    raise TimeoutError(client.log_path.read_text()[-4000:])


async def test_slurm_spawn_through_hub(hub, platform):
    require("Slurm", slurm_works(), "sinfo shows no usable node (start it with .ci/services.sh)")
    platform.spawn_options["alice"] = [vc("vision", [profile("cpu-small", cpu=1, memory=512 * 1024**2)])]
    assert (await hub.post("/users/alice")).status_code == 201

    # hostile options via the REST API are refused with the message, and nothing is allocated
    r = await hub.post("/users/alice/server", json={"image": "evil"})
    assert r.status_code == 400 and "Unknown server option(s): image" in r.json()["message"]
    await wait_server(hub, "alice", ready=False)
    assert not platform.allocations

    r = await hub.post("/users/alice/server", json={"vc": "vision", "profile": "cpu-small"})
    assert r.status_code in (201, 202), r.text
    await wait_server(hub, "alice", ready=True)
    [allocation] = platform.allocations.values()
    assert allocation["ref"] == "alice/" and allocation["vc"] == "vision"

    async with httpx.AsyncClient() as web:
        r = await web.get(f"{hub.proxy_url}/user/alice/api")
    assert r.status_code == 200 and "version" in r.json()
    jobs = subprocess.run(
        ["squeue", "-h", "-n", "spawner-jupyterhub", "-o", "%i %T %P %a %C"], capture_output=True, text=True
    ).stdout.split("\n")
    job_id, state, partition, account, cpus = [j for j in jobs if j][-1].split()
    # Slurm 22.05 without an accounting database accepts --account without checking it
    assert (state, partition, account, cpus) == ("RUNNING", "debug", "vision", "1")

    assert (await hub.delete("/users/alice/server")).status_code in (202, 204)
    await wait_server(hub, "alice", ready=False)
    for _ in range(40):
        if squeue(job_id) in ("", "COMPLETING", "CANCELLED"):
            break
        await asyncio.sleep(0.5)
    assert squeue(job_id) in ("", "COMPLETING", "CANCELLED")
    assert platform.released == [allocation["id"]]
