"""Spawn latency: Yitong (YitongSpawner -> platform service -> LocalProcessSpawner) versus a
bare JupyterHub with LocalProcessSpawner, in the same run on the same machine.

    .venv/bin/python bench/spawn.py [--spawns 7]

Both hubs run side by side; spawns alternate between them (which goes first alternates too). Each spawn is a fresh user's
`POST /hub/api/users/NAME/server` with the admin token, timed until the hub answers 201 (the
server is up and routed). Prints the median of each, the ratio and the added milliseconds.
Target (issue 2): ratio <= 1.10 and at most 150 ms added. Single spawns vary by seconds on a
small machine, so it also times, 50 times, just the platform calls YitongSpawner adds.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from helpers import free_port  # noqa: E402
from stack import Stack  # noqa: E402

BIN = Path(sys.executable).parent
BARE_CONFIG = """
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.ConfigurableHTTPProxy.command = ["{root}/node_modules/.bin/configurable-http-proxy"]
c.JupyterHub.db_url = "sqlite:///{work}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{work}/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{work}/home/{{username}}"
c.Spawner.args = {args!r}
c.Spawner.cmd = ["{bin}/jupyterhub-singleuser"]
c.Spawner.environment = {{"PATH": "{bin}:" + __import__("os").environ["PATH"]}}
c.Spawner.default_url = "/lab"
c.JupyterHub.load_roles = [{{"name": "bench", "scopes": ["admin:users", "admin:servers"], "services": ["bench"]}}]
c.JupyterHub.services = [{{"name": "bench", "api_token": "{token}"}}]
"""


class BareHub:
    def __init__(self, work: Path, extra_config: str = ""):
        self.work, self.port, self.token = work, free_port(), secrets.token_hex(16)
        self.api = f"http://127.0.0.1:{self.port}/hub/api"
        args = ["--allow-root"] if os.geteuid() == 0 else []
        (work / "config.py").write_text(
            BARE_CONFIG.format(
                port=self.port,
                hub_port=free_port(),
                proxy_port=free_port(),
                root=ROOT,
                work=work,
                token=self.token,
                args=args,
                bin=BIN,
            )
            + extra_config
        )
        self.log = open(work / "hub.log", "ab")
        self.proc = subprocess.Popen(
            [str(BIN / "jupyterhub"), "-f", str(work / "config.py")],
            cwd=work,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for _ in range(300):
            try:
                if httpx.get(f"{self.api}/", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise TimeoutError("bare hub did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)


def timed_spawn(api: str, token: str, user: str, options: dict) -> float:
    headers = {"Authorization": f"token {token}"}
    with httpx.Client(base_url=api, headers=headers, timeout=120) as hub:
        hub.post(f"/users/{user}")  # create the user first: not part of the spawn
        t0 = time.perf_counter()
        r = hub.post(f"/users/{user}/server", json=options)
        if r.status_code == 202:  # slower than the hub's slow_spawn_timeout: poll until ready
            while not hub.get(f"/users/{user}").json()["servers"].get("", {}).get("ready"):
                time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        if r.status_code not in (201, 202):
            raise RuntimeError(f"spawn of {user} failed: {r.status_code} {r.text}")
        hub.delete(f"/users/{user}/server")
        while hub.get(f"/users/{user}").json()["servers"]:
            time.sleep(0.1)
        return elapsed


def platform_overhead(stack: Stack, user: str, rounds: int = 50) -> float:
    """Median time of the calls YitongSpawner adds to a spawn and its stop: spawn options,
    allocation, release (hub -> service on loopback, with the service's token)."""
    token = (stack.data_dir / "secrets" / "service-token").read_text().strip()
    times = []
    with httpx.Client(base_url=stack.platform_direct, headers={"Authorization": f"token {token}"}) as api:
        for _ in range(rounds):
            t0 = time.perf_counter()
            api.get("/spawn-options", params={"user": user}).raise_for_status()
            r = api.post(
                "/allocations",
                json={"user": user, "vc": "bench", "profile": "cpu", "kind": "server", "ref": f"{user}/bench"},
            )
            r.raise_for_status()
            api.delete(f"/allocations/{r.json()['id']}").raise_for_status()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=7)
    n = parser.parse_args().spawns
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "bare").mkdir()
        users = [f"b{i}" for i in range(n + 1)]
        settings = {
            "backend": "local",
            "hub": {"admin_users": ["admin"]},
            "profiles": {"cpu": {"display_name": "CPU", "cpu": 0.1, "memory": "512Mi"}},
            "vcs": {"bench": {"quota": {"cpu": 100, "memory": "100Gi"}, "groups": ["bench"], "profiles": ["cpu"]}},
            "groups": {"bench": users},
        }
        yitong = Stack(tmp / "yitong", settings, {"admin": secrets.token_hex(8)})
        (tmp / "yitong").mkdir()
        yitong.start()
        bare = BareHub(tmp / "bare")
        try:
            token = yitong.token("admin")
            overhead = platform_overhead(yitong, users[0])
            ours, theirs = [], []
            for i, user in enumerate(users):  # the first round warms caches and is dropped
                # alternate which hub goes first, so neither pays for the other's shutdown
                if i % 2:
                    b = timed_spawn(yitong.api, token, user, {"vc": "bench", "profile": "cpu"})
                    a = timed_spawn(bare.api, bare.token, user, {})
                else:
                    a = timed_spawn(bare.api, bare.token, user, {})
                    b = timed_spawn(yitong.api, token, user, {"vc": "bench", "profile": "cpu"})
                if i:
                    theirs.append(a)
                    ours.append(b)
                print(f"spawn {i}: bare {a * 1000:7.0f} ms   yitong {b * 1000:7.0f} ms", flush=True)
        finally:
            bare.stop()
            yitong.stop()
    mb, my = statistics.median(theirs), statistics.median(ours)
    print(
        f"\nmedian of {n} spawns: bare JupyterHub + LocalProcessSpawner {mb * 1000:.0f} ms, Yitong {my * 1000:.0f} ms"
    )
    print(f"ratio yitong/bare = {my / mb:.3f}   added = {(my - mb) * 1000:+.0f} ms   (target <= 1.10 and <= +150 ms)")
    print(f"platform calls YitongSpawner adds per spawn+stop (median of 50): {overhead * 1000:.1f} ms")


if __name__ == "__main__":
    main()
