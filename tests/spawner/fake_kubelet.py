"""A FAKE KUBELET for the kmock emulator: runs pods' containers as local processes.

It watches pods through the emulator's HTTP API. For a new pod it starts the first container's
`command + args` with the container's `env` (values only) as a local process, then patches the
pod status to Running with podIP 127.0.0.1 and Ready conditions. When the pod is deleted it
kills the process. Images, volumes and resources are ignored: this is a stand-in for a node.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal

import aiohttp


class FakeKubelet:
    def __init__(self, api_url: str):
        self.api_url = str(api_url).rstrip("/")
        self.procs: dict[tuple[str, str], asyncio.subprocess.Process] = {}
        self.started: list[dict] = []  # pod manifests as the kubelet saw them
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self._session = aiohttp.ClientSession()
        self._task = asyncio.create_task(self._watch())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
        for key in list(self.procs):
            await self._kill(key)
        await self._session.close()

    async def _watch(self) -> None:
        while True:
            try:
                async with self._session.get(f"{self.api_url}/api/v1/pods", params={"watch": "true"}) as resp:
                    async for line in resp.content:
                        if line.strip():
                            await self._on_event(json.loads(line))
            except (aiohttp.ClientError, json.JSONDecodeError):
                await asyncio.sleep(0.2)

    async def _on_event(self, event: dict) -> None:
        pod = event.get("object", {})
        key = (pod["metadata"].get("namespace", "default"), pod["metadata"]["name"])
        if event["type"] == "DELETED":
            await self._kill(key)
        elif event["type"] == "ADDED" and key not in self.procs and not pod["metadata"].get("deletionTimestamp"):
            await self._run(key, pod)

    async def _run(self, key: tuple[str, str], pod: dict) -> None:
        container = pod["spec"]["containers"][0]
        argv = list(container.get("command") or []) + list(container.get("args") or [])
        env = {"PATH": os.environ.get("PATH", "")}
        env.update({e["name"]: e.get("value", "") for e in container.get("env", []) if "value" in e})
        self.started.append(pod)
        self.procs[key] = await asyncio.create_subprocess_exec(*argv, env=env, start_new_session=True)
        status = {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "hostIP": "127.0.0.1",
            "conditions": [
                {"type": t, "status": "True"} for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": container["name"],
                    "ready": True,
                    "restartCount": 0,
                    "image": container.get("image", ""),
                    "imageID": "",
                    "state": {"running": {}},
                }
            ],
        }
        url = f"{self.api_url}/api/v1/namespaces/{key[0]}/pods/{key[1]}/status"
        async with self._session.patch(
            url, json={"status": status}, headers={"Content-Type": "application/merge-patch+json"}
        ) as resp:
            resp.raise_for_status()

    async def _kill(self, key: tuple[str, str]) -> None:
        proc = self.procs.pop(key, None)
        if proc and proc.returncode is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
