"""Crash safety of the service side: a real ``yitong-service`` process is killed with SIGKILL at
random moments while a client uploads packs, resumable large objects and commits versions in a
loop. Afterwards no partial version exists (every version's manifest and objects are in the
store), ``verify`` is clean, GC removes the debris (orphan packs, manifests, temp files) and
every version still downloads intact.
"""

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import yaml
from blake3 import blake3
from helpers import free_port

from yitong_services.datasets.manifest import hashes
from yitong_services.datasets.objindex import locate

PREFIX = "/services/yitong/"
ROUNDS = int(os.environ.get("YITONG_CRASH_ROUNDS", "10"))


def b3(data: bytes) -> str:
    return blake3(data).hexdigest()


def _start(settings: Path, data_dir: Path, port: int, hub) -> subprocess.Popen:
    env = os.environ | {
        "JUPYTERHUB_API_URL": hub.api_url,
        "JUPYTERHUB_API_TOKEN": hub.service_token,
        "JUPYTERHUB_SERVICE_PREFIX": PREFIX,
    }
    cmd = [
        str(Path(sys.executable).parent / "yitong-service"),
        "--settings",
        str(settings),
        "--data-dir",
        str(data_dir),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(data_dir / "service.log", "ab"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, (data_dir / "service.log").read_text()[-2000:]
        try:
            if httpx.get(f"http://127.0.0.1:{port}{PREFIX}api/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("yitong-service did not start")


def _pack(blobs: list[bytes]) -> bytes:
    return b"".join(bytes.fromhex(b3(b)) + len(b).to_bytes(8, "big") + b for b in blobs)


def _client_loop(base: str, token: str, stop: threading.Event, rng: random.Random, outcome: dict) -> None:
    """Upload and commit until the service dies; count what happened."""
    api = httpx.Client(base_url=f"{base}{PREFIX}api/v1/", headers={"Authorization": f"token {token}"}, timeout=30)
    try:
        while not stop.is_set():
            small = {f"s/{rng.randrange(10**9)}.bin": rng.randbytes(rng.randrange(1, 4096)) for _ in range(150)}
            large = rng.randbytes(1_500_000)
            api.post("objects/pack", content=_pack(list(small.values())))
            h = b3(large)
            offset = int(api.head(f"objects/{h}/upload").headers.get("Upload-Offset", 0))
            while offset < len(large):
                r = api.patch(
                    f"objects/{h}/upload",
                    content=large[offset : offset + 500_000],
                    headers={"Upload-Offset": str(offset), "Upload-Length": str(len(large))},
                )
                offset = r.json()["offset"]
            latest = api.get("datasets/vision/crash").json()["latest"]
            files = [{"path": p, "size": len(b), "hash": b3(b)} for p, b in small.items()]
            files.append({"path": f"l/{h}", "size": len(large), "hash": h})
            r = api.post("datasets/vision/crash/versions", json={"parent": latest, "message": "m", "files": files})
            assert r.status_code == 201, r.text
            outcome["commits"] += 1
    except (httpx.HTTPError, ValueError, KeyError):
        outcome["interrupted"] += 1  # the service died under us
    finally:
        api.close()


async def test_kill_9_during_commits(hub, db_url, tmp_path, service_factory):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        yaml.safe_dump(
            {
                "backend": "local",
                "service": {"reconcile_interval": 0},
                "database": {"url": db_url},
                "vcs": {"vision": {"groups": ["vision"]}},
            }
        )
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _start(settings, data_dir, port, hub)
    r = httpx.post(
        f"{base}{PREFIX}api/v1/datasets",
        json={"vc": "vision", "name": "crash"},
        headers={"Authorization": f"token {hub.tokens['alice']}"},
    )
    assert r.status_code == 201, r.text
    rng = random.Random(int(os.environ.get("YITONG_CRASH_SEED", "3")))
    outcome = {"commits": 0, "interrupted": 0}
    for _ in range(ROUNDS):
        stop = threading.Event()
        client = threading.Thread(target=_client_loop, args=(base, hub.tokens["alice"], stop, rng, outcome))
        client.start()
        time.sleep(rng.uniform(0.2, 2.5))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stop.set()
        client.join(60)
        proc = _start(settings, data_dir, port, hub)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert outcome["interrupted"] >= ROUNDS - 1, outcome
    assert outcome["commits"] >= 1, outcome

    async with service_factory("data", vcs={"vision": {"groups": ["vision"]}}, profiles={}) as svc:
        storage = svc.ctx.storage
        versions = (await svc.call("alice", "GET", "datasets/vision/crash/versions")).json()
        assert len(versions) >= outcome["commits"]
        for v in versions:  # no partial version: manifest and every object are stored
            manifest = storage.manifest(v["manifest"])
            assert (len(manifest["files"]), sum(f["size"] for f in manifest["files"])) == (v["files"], v["bytes"])
            with svc.ctx.db.session() as s:
                assert set(locate(s, hashes(manifest))) == set(hashes(manifest))
        assert (await svc.call("admin", "POST", "storage/verify")).json()["corrupt"] == []
        assert (await svc.call("admin", "POST", "storage/verify")).json()["missing"] == []
        r = await svc.call("admin", "POST", "storage/gc?grace=0")
        assert r.status_code == 200, r.text
        print(f"crash loop: {outcome}, {len(versions)} versions, GC removed {r.json()}")
        report = (await svc.call("admin", "POST", "storage/verify")).json()
        assert report["corrupt"] == [] and report["missing"] == []
        assert not [k for k, _, _ in storage.store.listing("") if ".tmp-" in k]
        for v in versions:
            manifest = storage.manifest(v["manifest"], cached=False)
            wanted = sorted(hashes(manifest))
            r = await svc.call(
                "alice", "POST", f"datasets/vision/crash/versions/{v['number']}/fetch", json={"hashes": wanted}
            )
            assert r.status_code == 200
            got, i, data = [], 0, r.content
            while i < len(data):
                size = int.from_bytes(data[i + 32 : i + 40], "big")
                got.append(b3(data[i + 40 : i + 40 + size]))
                i += 40 + size
            assert sorted(got) == wanted
