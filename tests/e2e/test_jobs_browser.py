"""The Jobs section of the Yitong panel in headless Chromium, against the real hub, platform
service and local job backend: a refused submit shows the service's sentence next to the form,
a job submitted through the form runs and succeeds while its log streams into the detail, a
spec typed as YAML runs, a waiting job shows its queue position and reason, Cancel cancels,
Clone fills the form and TensorBoard opens the server extension's URL."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest
from jobs_helpers import TERMINAL

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.timeout(600)]

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
VIEWPORT = (1280, 1000)  # the conftest's page fixture: room for the job detail
USER = "carol"
LINES = 12
# prints LINES lines over about 5 s, so the job is seen running and its log seen growing
PROGRAM = f"import time\nfor i in range({LINES}):\n    print(f'line {{i}}', flush=True)\n    time.sleep(0.4)\n"


def wait_until(probe, timeout: float, what: str, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def open_panel(stack, page) -> None:
    page.goto(f"{stack.url}/hub/login")
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", stack.passwords[USER])
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(lambda url: "/hub/login" not in url)
    page.goto(f"{stack.url}/user/{USER}/lab")
    tab = page.locator('.jp-SideBar [data-id="yitong-panel"]')
    tab.wait_for(timeout=120_000)
    if not page.locator("#yitong-panel").is_visible():
        tab.click()
    page.locator('#yitong-panel .yt-vc[data-vc="vision"]').wait_for(timeout=60_000)


def screenshot(page, name: str) -> None:
    """Into docs/img, without JupyterLab's "news?" toast."""
    close = page.locator(".jp-Notification-Toast-Close")
    for i in range(close.count()):
        close.nth(i).click()
    if close.count():
        page.wait_for_timeout(500)
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS_IMG / name))


def test_jobs_panel(stack, admin_token, page):
    from playwright.sync_api import expect

    with stack.hub(admin_token) as hub:
        r = hub.post(f"/users/{USER}/server", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code in (201, 202), r.text
    stack.wait_ready(admin_token, USER)
    api = stack.platform_client(stack.token(USER))
    try:
        open_panel(stack, page)
        panel = page.locator("#yitong-panel")
        form = panel.locator("form.yt-job-form")

        # a bad name: the service's sentence next to the form, nothing queued
        panel.locator(".yt-job-new").click()
        expect(form).to_be_visible()
        expect(form.locator(".yt-job-form-vc")).to_have_value("vision")  # this server's VC
        form.locator(".yt-job-form-name").fill("Hello_World")
        form.locator(".yt-job-form-command").fill(f"{shlex.quote(sys.executable)} -u -c {shlex.quote(PROGRAM)}")
        form.locator(".yt-job-form-cpu").fill("0.5")
        form.locator(".yt-job-form-memory").fill("256Mi")
        form.locator(".yt-job-form-submit").click()
        error = form.locator(".yt-job-form-error")
        expect(error).to_contain_text("spec.name: 'Hello_World' is not a valid name")
        assert form.get_attribute("data-state") == "error"
        assert [j for j in api.get("/jobs").json() if j["user"] == USER] == []

        # fixed: the job is accepted, selected, runs, and its log streams while it runs
        form.locator(".yt-job-form-name").fill("hello")
        form.locator(".yt-job-form-submit").click()
        detail = panel.locator(".yt-job-detail")
        detail.wait_for(timeout=30_000)
        expect(form).to_be_hidden()
        job_id = int(detail.get_attribute("data-job"))
        assert api.get(f"/jobs/{job_id}").json()["name"] == "hello"
        row = panel.locator(f'.yt-job[data-job="{job_id}"]')
        log = detail.locator(".yt-job-log")
        seen, partial = [], False
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            state = row.get_attribute("data-state")
            if not seen or seen[-1] != state:
                seen.append(state)
            text = log.inner_text()
            partial = partial or ("line 0" in text and f"line {LINES - 1}" not in text)
            if state in TERMINAL:
                break
            time.sleep(0.1)
        assert seen[-1] == "succeeded", (seen, api.get(f"/jobs/{job_id}").json())
        assert "running" in seen, seen
        assert partial, "the log never showed a part of the output while the job ran"
        expect(row.locator(".yt-job-state")).to_have_text("succeeded")
        expect(detail.locator(".yt-job-detail-state")).to_have_text("succeeded")
        expect(detail.locator('.yt-job-field[data-field="exit_code"] .yt-job-field-value')).to_have_text("0")
        expect(log).to_have_attribute("data-follow", "done", timeout=30_000)
        lines = [line for line in log.inner_text().splitlines() if line.startswith("line ")]
        assert lines == [f"line {i}" for i in range(LINES)]
        # the run's ledger record expands under the detail
        detail.locator(".yt-job-run-toggle").first.click()
        expect(detail.locator(".yt-job-run-record").first).to_contain_text("succeeded")
        detail.scroll_into_view_if_needed()
        screenshot(page, "job-detail.png")

        # TensorBoard opens the server extension's route in a new tab
        page.evaluate("window.open = (url) => { window.__ytOpened = url; return null; }")
        detail.locator(".yt-job-tensorboard").click()
        opened = page.evaluate("window.__ytOpened")
        assert opened.endswith(f"/user/{USER}/yitong/jobs/{job_id}/tensorboard"), opened

        # Clone: the form opens with the spec as text
        detail.locator(".yt-job-clone").click()
        expect(form).to_have_attribute("data-mode", "yaml")
        cloned = json.loads(form.locator(".yt-job-form-yaml").input_value())
        assert cloned["name"] == "hello" and cloned["vc"] == "vision" and "time.sleep(0.4)" in cloned["command"]
        form.locator(".yt-job-form-cancel").click()
        expect(form).to_be_hidden()

        # a long job typed as a YAML spec, then a job that has to wait behind it
        free = api.get("/vcs/vision").json()["free"]["cpu"]
        big = max(1, int(free) - 1)
        panel.locator(".yt-job-new").click()
        form.locator(".yt-job-form-mode-yaml").check()
        form.locator(".yt-job-form-yaml").fill(
            f"name: sleeper\nvc: vision\nenvironment: {{kernel: python3}}\n"
            f"command: [{json.dumps(sys.executable)}, -c, 'import time; time.sleep(300)']\n"
            f"cpu: {big}\nmemory: 256Mi\n"
        )
        form.locator(".yt-job-form-submit").click()
        expect(detail.locator(".yt-job-detail-name")).to_contain_text("sleeper", timeout=30_000)
        sleeper = int(detail.get_attribute("data-job"))
        expect(panel.locator(f'.yt-job[data-job="{sleeper}"]')).to_have_attribute(
            "data-state", "running", timeout=60_000
        )
        r = api.post(
            "/jobs",
            json={
                "name": "waiter",
                "vc": "vision",
                "environment": {"kernel": "python3"},
                "command": [sys.executable, "-c", "print('ok')"],
                "cpu": 2,
                "memory": "256Mi",
            },
        )
        assert r.status_code == 201, r.text
        waiter = r.json()["id"]
        waiting = panel.locator(f'.yt-job[data-job="{waiter}"]')
        expect(waiting).to_have_attribute("data-state", "queued", timeout=30_000)
        expect(waiting.locator(".yt-job-position")).to_have_text("#1 in the queue")
        expect(waiting.locator(".yt-job-reason")).to_contain_text("waiting")
        expect(waiting.locator(".yt-job-reason")).to_contain_text("cpu")
        detail.locator(".yt-job-close").click()
        expect(detail).to_have_count(0)
        panel.locator(".yt-jobs").scroll_into_view_if_needed()
        screenshot(page, "jobs-panel.png")

        # Cancel the long job from its detail: it ends cancelled, and the waiting job runs
        panel.locator(f'.yt-job[data-job="{sleeper}"]').click()
        expect(detail).to_have_attribute("data-job", str(sleeper))
        detail.locator(".yt-job-cancel").click()
        expect(panel.locator(f'.yt-job[data-job="{sleeper}"]')).to_have_attribute(
            "data-state", "cancelled", timeout=60_000
        )
        expect(detail.locator(".yt-job-detail-state")).to_have_text("cancelled")
        expect(detail.locator(".yt-job-cancel")).to_have_count(0)
        expect(detail.locator(".yt-job-retry")).to_be_visible()
        expect(waiting).to_have_attribute("data-state", "succeeded", timeout=60_000)
    finally:
        for job in api.get("/jobs", params={"user": USER}).json():
            if job["state"] not in TERMINAL:
                api.post(f"/jobs/{job['id']}/cancel")
        api.close()
        stack.stop_server(admin_token, USER)
