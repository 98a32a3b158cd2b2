"""What the JupyterLab browser tests (tests/e2e/test_*_browser.py) do alike: log a person in, open
a Yitong view by its deep link or a launcher card, find a view's tab, and save a screenshot into
docs/img."""

from __future__ import annotations

import time
from pathlib import Path

DOCS_IMG = Path(__file__).resolve().parent.parent / "docs" / "img"


def view(page, name: str, arg: str = ""):
    """The main-area tab of a view (views.ts: .yt-view[data-view][data-arg])."""
    return page.locator(f'.yt-view[data-view="{name}"][data-arg="{arg}"]')


def log_in(stack, page, user: str) -> str:
    """Log ``user`` in with their password; the URL of their JupyterLab."""
    page.goto(f"{stack.url}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", stack.passwords[user])
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(lambda url: "/hub/login" not in url)
    return f"{stack.url}/user/{user}/lab"


def deep_link(page, lab: str, route: str) -> None:
    page.goto(f"{lab}?yt={route}")
    page.locator('.jp-SideBar [data-id="yitong-panel"]').wait_for(timeout=120_000)


def launcher_card(page, label: str, category: str = "Yitong", within: float = 90):
    """A new launcher's card ``label``, visible. The shortcut (Accel Shift L, ``launcher:create``)
    is pressed again while no card shows: a press made while JupyterLab still restores its
    layout, or while a restored widget holds the focus, can be lost (seen once in CI)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    card = page.locator(f'.jp-LauncherCard[data-category="{category}"]', has_text=label).last
    deadline = time.monotonic() + within
    while True:
        page.keyboard.press("Control+Shift+L")
        try:
            card.wait_for(timeout=10_000)
            return card
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise


def screenshot(page, name: str) -> None:
    """Into docs/img, without JupyterLab's "news?" toast."""
    close = page.locator(".jp-Notification-Toast-Close")
    for i in range(close.count()):
        close.nth(i).click()
    if close.count():
        page.wait_for_timeout(500)
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS_IMG / name))
