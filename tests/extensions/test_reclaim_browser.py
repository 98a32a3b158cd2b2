"""The accelerator reclaim's warning as a JupyterLab notification, in a real browser (real
``jupyter lab`` with this checkout's labextension build and the server extension, headless
Chromium) against the stand-in platform (conftest), which lists one warning for alice's
server. The route itself: tests/services/ops/test_reclaim.py; end to end: tests/e2e/test_reclaim.py."""

import asyncio
import base64
import time
from pathlib import Path

import pytest
from helpers import require
from test_panel_browser import TOKEN, lab, page, wait_for  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser
BUILD = Path(__file__).resolve().parents[2] / "extensions" / "yitong_lab" / "labextension"
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


@pytest.fixture
def this_build(monkeypatch, tmp_path):
    """JupyterLab loads the first ``yitong-lab`` on its path: this checkout's build, when built."""
    require(
        "this checkout's labextension build", (BUILD / "package.json").exists(), "cd extensions && npm run build:prod"
    )
    ext = tmp_path / "jupyter" / "labextensions"
    ext.mkdir(parents=True)
    (ext / "yitong-lab").symlink_to(BUILD)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))


async def test_the_warning_shows_as_a_notification(this_build, yt_env, platform_api, lab, page):  # noqa: F811
    platform_api.reclaim_warnings.append(
        {
            "ref": "alice/",
            "server": "",
            "vc": "vision",
            "devices": {"nvidia.com/gpu": 1},
            "reason": "idle with an accelerator: stopped in 600 s unless used",
            "measured": "GPU 0 0% on node-1, 3 s ago",
            "warned_at": time.time(),
            "stop_at": time.time() + 600,
        }
    )
    await page.send("Page.navigate", url=f"{lab}lab?token={TOKEN}")
    # "about 10 min" while the page loads in under 30 s; a slower load (CI) reads "about 9 min"
    text = r"/it will be stopped in about (10|9|8) min unless you use it \(VC vision\)\./.test(document.body.innerText)"

    async def shown():
        return await page.eval(text)

    await wait_for(shown, timeout=120, what="the reclaim notification")
    assert await page.eval('document.body.innerText.includes("This server\'s 1 nvidia.com/gpu is idle")')
    assert any(
        r[1].split("?")[0].endswith("/reclaim/warnings") and r[2] == "token alice-token" for r in yt_env.requests
    )
    # JupyterLab's own first-run question, answered, so that the screenshot shows ours alone
    await page.eval("[...document.querySelectorAll('.jp-toast-button')].find(b => b.innerText === 'No')?.click()")
    await asyncio.sleep(1)
    shot = await page.send("Page.captureScreenshot", format="png")
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    (DOCS_IMG / "ops-reclaim-notice.png").write_bytes(base64.b64decode(shot["data"]))
