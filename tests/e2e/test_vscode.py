"""VS Code from the JupyterLab launcher: a person starts a server, clicks the "VS Code" card and
gets the real code-server workbench with their home folder open, and `yt` on PATH in its
terminal. code-server comes from `make code-server` (the pinned npm install into .tools, once
per checkout: the first run installs it, a few minutes; later runs find it there)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from urllib.parse import unquote

import pytest
from stack import ROOT

# the first run in a checkout installs code-server inside the fixture (a few minutes; CI installs
# it before the tests, .ci/run)
pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.timeout(1800)]

DOCS_IMG = ROOT / "docs" / "img"
VIEWPORT = (1280, 800)


@pytest.fixture(scope="session")
def code_server_installed():
    """``make code-server`` when .tools has none (one install per test session, then cached)."""
    binary = ROOT / ".tools" / "code-server" / "bin" / "code-server"
    if not os.access(binary, os.X_OK):
        started = time.monotonic()
        r = subprocess.run(["make", "-C", str(ROOT), "code-server"], capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
        print(f"make code-server: {time.monotonic() - started:.0f}s")
    return binary


def test_vscode_from_the_launcher(stack, admin_token, page, code_server_installed):
    home = stack.data_dir / "home" / "carol"
    try:
        page.goto(f"{stack.url}/hub/login")
        page.fill("input[name=username]", "carol")
        page.fill("input[name=password]", stack.passwords["carol"])
        page.click("input[type=submit], button[type=submit]")
        page.goto(f"{stack.url}/hub/spawn")
        page.check("#yt-profile-vision__cpu-small")
        page.click("#spawn_form input[type=submit], #spawn_form button[type=submit]")
        page.wait_for_url("**/user/carol/lab**", timeout=120_000)
        # a fresh layout with the launcher in front: an earlier browser test may have left
        # carol's workspace with Yitong's tabs open
        page.goto(f"{stack.url}/user/carol/lab?reset")

        card = page.locator('.jp-LauncherCard[title="VS Code"], .jp-LauncherCard:has-text("VS Code")').first
        card.wait_for(timeout=120_000)
        with page.context.expect_page(timeout=60_000) as opened:
            card.click()
        vscode = opened.value
        workbench = vscode.locator(".monaco-workbench")
        workbench.wait_for(timeout=120_000)
        assert vscode.url.startswith(f"{stack.url}/user/carol/code-server/")
        # code-server opened the folder it was started with: the person's home
        vscode.wait_for_url(lambda url: f"folder={home}" in unquote(url), timeout=60_000)
        explorer = vscode.locator(".explorer-folders-view").first
        explorer.wait_for(timeout=60_000)
        assert home.name.upper() in vscode.locator(".sidebar").inner_text(timeout=30_000).upper()

        # its terminal: the same PATH as JupyterLab's, so `yt` is there
        vscode.keyboard.press("Control+Backquote")
        terminal = vscode.locator(".terminal-wrapper, .xterm").first
        terminal.wait_for(timeout=60_000)
        vscode.wait_for_timeout(2_000)  # the shell's prompt
        terminal.click()
        vscode.keyboard.type("command -v yt > ~/yt-path.txt\n")
        found = home / "yt-path.txt"
        for _ in range(100):
            if found.exists() and found.read_text().strip():
                break
            time.sleep(0.2)
        assert Path(found.read_text().strip()) == stack.bin_dir / "yt"

        vscode.keyboard.type("clear; command -v yt; yt --help | head -3\n")  # for the screenshot
        vscode.wait_for_timeout(3_000)
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        vscode.screenshot(path=str(DOCS_IMG / "vscode.png"))
    finally:
        stack.stop_server(admin_token, "carol")
