"""The JupyterLab "Yitong" panel in a real browser: a real ``jupyter lab`` (with the installed
prebuilt labextension and the server extension) against the stand-in platform API, driven
by headless Chromium over the DevTools protocol."""

import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from helpers import free_port, require
from tornado.httpclient import AsyncHTTPClient
from tornado.websocket import websocket_connect

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "browser-test-token"
BASE = "/user/alice/"


def labextension_installed() -> bool:
    from jupyter_core.paths import jupyter_path

    return any(Path(p, "yitong-lab", "package.json").exists() for p in jupyter_path("labextensions"))


async def wait_for(probe, timeout=90.0, what="condition"):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            value = await probe()
            if value:
                return value
        except Exception:  # not up yet
            pass
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.5)


@pytest.fixture
async def lab(yt_env, tmp_path):
    require("the yitong-lab labextension", labextension_installed(), "run: pip install -e extensions")
    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "YITONG_VC": "vision"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.base_url={BASE}",
            f"--ServerApp.root_dir={tmp_path}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "lab.log").open("w"),
    )
    url = f"http://127.0.0.1:{port}{BASE}"
    try:
        await wait_for(
            lambda: AsyncHTTPClient().fetch(f"{url}api/status?token={TOKEN}"),
            timeout=60,
            what=f"jupyter lab (log: {tmp_path / 'lab.log'})",
        )
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class Page:
    """The smallest DevTools client: evaluate JavaScript in one page."""

    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    async def send(self, method, **params):
        self.next_id += 1
        await self.ws.write_message(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(await self.ws.read_message())
            if message.get("id") == self.next_id:
                return message.get("result", {})

    async def eval(self, expression):
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")


@pytest.fixture
async def page(tmp_path):
    require("chromium", os.path.exists(CHROMIUM), "apt-get install chromium")
    port = free_port()
    proc = subprocess.Popen(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1280,800",
            f"--remote-debugging-port={port}",
            f"--user-data-dir={tmp_path / 'chromium'}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        async def target():
            listing = urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2).read()
            return next(t["webSocketDebuggerUrl"] for t in json.loads(listing) if t["type"] == "page")

        ws = await websocket_connect(await wait_for(target, what="chromium"), max_message_size=2**26)
        yield Page(ws)
        ws.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


PANEL_STATE = """JSON.stringify({
  vcs: [...document.querySelectorAll('#yitong-panel .yt-vc')].map(e => e.dataset.vc),
  current: document.querySelector('#yitong-panel .yt-vc.yt-current')?.dataset.vc,
  gpu: document.querySelector('.yt-vc[data-vc=vision] .yt-resource[data-resource="nvidia.com/gpu"]')?.dataset,
  memory: document.querySelector('.yt-vc[data-vc=vision] .yt-resource[data-resource=memory] .yt-resource-amounts')?.textContent,
  error: document.querySelector('#yitong-panel .yt-error')?.hidden ? null
         : document.querySelector('#yitong-panel .yt-error')?.textContent,
})"""


TAB_CENTER = """(() => {
  const r = document.querySelector('li[data-id="yitong-panel"]').getBoundingClientRect();
  return [r.x + r.width / 2, r.y + r.height / 2];
})()"""


async def test_panel_shows_vcs_and_errors(yt_env, lab, page):
    await page.send("Page.navigate", url=f"{lab}lab?token={TOKEN}")

    async def panel():
        state = json.loads(await page.eval(PANEL_STATE))
        return state if state["vcs"] else None

    state = await wait_for(panel, timeout=120, what="the Yitong panel")
    assert state["vcs"] == ["default", "vision"]
    assert state["current"] == "vision"
    assert {k: state["gpu"][k] for k in ("quota", "used", "free")} == {"quota": "2", "used": "1", "free": "1"}
    assert state["memory"] == "2 GiB / 16 GiB used · 14 GiB free"
    assert state["error"] is None
    assert any(r[1].split("?")[0].endswith("/vcs") and r[2] == "token alice-token" for r in yt_env.requests)

    # the sidebar tab opens it; the refresh button shows the service's sentence on failure
    is_open = "!document.getElementById('yitong-panel').classList.contains('lm-mod-hidden')"

    async def open_panel():  # a real click (lumino tab bars hit-test pointer events); retried
        if not await page.eval(is_open):  # while the shell is still laying itself out
            x, y = await page.eval(TAB_CENTER)
            for kind in ("mousePressed", "mouseReleased"):
                await page.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
            await asyncio.sleep(1)
        return await page.eval(is_open)

    await wait_for(open_panel, timeout=30, what="the panel to open")
    if os.environ.get("YT_SCREENSHOT"):  # a PNG of the open panel, for people
        await asyncio.sleep(1)
        shot = await page.send("Page.captureScreenshot", format="png")
        Path(os.environ["YT_SCREENSHOT"]).write_bytes(base64.b64decode(shot["data"]))
    yt_env.fail = (503, "the platform service is restarting")
    await page.eval("document.querySelector('#yitong-panel .yt-refresh').click()")

    async def error():
        return json.loads(await page.eval(PANEL_STATE))["error"]

    assert await wait_for(error, timeout=30, what=".yt-error") == "the platform service is restarting"


UPLOAD_STATE = """JSON.stringify({
  state: document.querySelector('.yt-view[data-view=datasets] .yt-upload')?.dataset.state ?? null,
  status: document.querySelector('.yt-view[data-view=datasets] .yt-upload-status')?.textContent,
  progress: [document.querySelector('.yt-upload-progress')?.value, document.querySelector('.yt-upload-progress')?.max],
  versions: [...document.querySelectorAll('.yt-dataset[data-dataset="vision/web"] .yt-version')]
            .map(e => e.dataset.version),
})"""


async def test_panel_uploads_a_folder_as_a_version(yt_env, lab, page, tmp_path):
    """The Datasets tab (opened by its deep link ?yt=datasets): pick a folder (input webkitdirectory), upload with a progress bar, see the
    new version, copy the path of its materialised tree."""
    folder = tmp_path / "picked" / "imgs"
    (folder / "train").mkdir(parents=True)
    files = {"a.txt": b"alpha", "train/1.png": os.urandom(300_000)}
    for path, data in files.items():
        (folder / path).write_bytes(data)
    await page.send("Page.navigate", url=f"{lab}lab?token={TOKEN}&yt=datasets")
    await wait_for(
        lambda: page.eval("!!document.querySelector('.yt-view[data-view=datasets] .yt-datasets .yt-upload')"),
        timeout=120,
        what="the Datasets tab",
    )
    await page.eval("""(() => {
      document.querySelector('.yt-upload-dataset').value = 'vision/web';
      document.querySelector('.yt-upload-message').value = 'from the panel';
    })()""")

    async def pick():
        # the panel may redraw between looking the input up and setting its files: retry
        root = (await page.send("DOM.getDocument"))["root"]["nodeId"]
        node = (await page.send("DOM.querySelector", nodeId=root, selector=".yt-upload input[type=file]"))["nodeId"]
        await page.send("DOM.setFileInputFiles", nodeId=node, files=[str(folder)])
        return await page.eval(
            "Array.from(document.querySelector('.yt-upload input[type=file]').files)"
            ".map(f => f.webkitRelativePath).sort()"
        )

    picked = await wait_for(pick, timeout=30, what="the folder to be picked")
    assert picked == ["imgs/a.txt", "imgs/train/1.png"]
    await page.eval("document.querySelector('.yt-upload-button').click()")

    async def uploaded():
        state = json.loads(await page.eval(UPLOAD_STATE))
        return (
            state if state["state"] in ("done", "error") and (state["versions"] or state["state"] == "error") else None
        )

    state = await wait_for(uploaded, timeout=60, what="the upload")
    assert (state["state"], state["status"], state["versions"]) == ("done", "Committed vision/web v1.", ["1"])
    assert state["progress"][0] == state["progress"][1] > 0
    version = yt_env.datasets.datasets["vision/web"]["versions"][0]
    assert sorted(f["path"] for f in version["files"]) == ["a.txt", "train/1.png"]
    assert version["message"] == "from the panel"

    await page.eval("document.querySelector('.yt-version[data-version=\"1\"] .yt-copy-path').click()")
    path = await wait_for(
        lambda: page.eval("document.querySelector('.yt-version[data-version=\"1\"]').dataset.path"),
        timeout=30,
        what="the materialised path",
    )
    assert Path(path, "train", "1.png").read_bytes() == files["train/1.png"]
