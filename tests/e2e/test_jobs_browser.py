"""The Yitong views of JupyterLab in headless Chromium, against the real hub, platform service and
local job backend: the Jobs and Datasets tabs open from the launcher, every view opens by its deep
link (``?yt=...``), a refused submit shows the service's sentence next to the form, a job
submitted from the form runs and its log shows in its own tab, Clone opens the form with the spec
as YAML in human units, a waiting job shows its queue position and reason in the Jobs tab, Cancel
cancels, TensorBoard opens the server extension's URL. Screenshots go to docs/img/lab-*.png."""

from __future__ import annotations

import json
import sys
import time

import pytest
from jobs_helpers import TERMINAL
from lab_browser import deep_link, launcher_card, log_in, screenshot, view

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.timeout(600)]

VIEWPORT = (1400, 900)  # the conftest's page fixture: a main area wide enough for the form
USER = "carol"
LINES = 12
# prints LINES lines over about 5 s, so the job is seen running and its log seen growing
PROGRAM = f"import time\nfor i in range({LINES}):\n    print(f'line {{i}}', flush=True)\n    time.sleep(0.4)\n"


def saved_layout(stack, page, wanted: list[str]) -> None:
    """Wait until JupyterLab has saved a layout holding these tabs (it saves a moment after the
    layout changes, and a page load restores the last saved one)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        saved = page.request.get(f"{stack.url}/user/{USER}/lab/api/workspaces/default").text()
        if all(k in saved for k in wanted):
            return
        page.wait_for_timeout(250)
    raise AssertionError(f"the saved layout never held {wanted}: {saved[:2000]}")


def test_lab_views(stack, admin_token, page):
    from playwright.sync_api import expect

    with stack.hub(admin_token) as hub:
        r = hub.post(f"/users/{USER}/server", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code in (201, 202), r.text
    stack.wait_ready(admin_token, USER)
    api = stack.platform_client(stack.token(USER))
    try:
        lab = log_in(stack, page, USER)

        # the launcher's Yitong cards open the Jobs and Datasets tabs
        page.goto(lab)
        tab = page.locator('.jp-SideBar [data-id="yitong-panel"]')
        tab.wait_for(timeout=120_000)
        if not page.locator("#yitong-panel").is_visible():
            tab.click()  # open, the sidebar stays open across reloads (the workspace)
        page.locator('#yitong-panel .yt-vc[data-vc="vision"]').wait_for(timeout=60_000)
        for label, name in (("Jobs", "jobs"), ("Datasets", "datasets")):
            launcher_card(page, label).click()
            expect(view(page, name)).to_be_visible(timeout=30_000)
        screenshot(page, "lab-datasets.png")

        # the form, by deep link: the VC is this server's, the dataset field starts empty
        deep_link(page, lab, "form")
        form_view = view(page, "form")
        form = form_view.locator("form.yt-job-form")
        expect(form.locator(".yt-job-form-vc")).to_have_value("vision", timeout=60_000)
        expect(form.locator(".yt-job-form-dataset")).to_have_value("")

        # a bad name: the service's sentence next to the form, nothing queued
        form.locator(".yt-job-form-name").fill("Hello_World")
        form.locator(".yt-job-form-command").fill('python -c "print(42)"')
        form.locator(".yt-job-form-cpu").fill("0.5")
        form.locator(".yt-job-form-memory").fill("256Mi")
        yaml_text = form.locator(".yt-job-form-yaml").input_value()
        assert "name: Hello_World" in yaml_text and "cpu: 500m" in yaml_text, yaml_text
        form.locator(".yt-job-form-submit").click()
        expect(form.locator(".yt-job-form-error")).to_contain_text("spec.name: 'Hello_World' is not a valid name")
        assert form.get_attribute("data-state") == "error"
        assert [j for j in api.get("/jobs").json() if j["user"] == USER] == []

        # fixed in the YAML: the fields follow; submitted, the job's tab opens and shows its log
        yaml_box = form.locator(".yt-job-form-yaml")
        yaml_box.fill(yaml_text.replace("name: Hello_World", "name: hello"))
        expect(form.locator(".yt-job-form-name")).to_have_value("hello")
        screenshot(page, "lab-job-form.png")
        form.locator(".yt-job-form-submit").click()
        detail = page.locator(".yt-view[data-view=job] .yt-job-detail")
        detail.wait_for(timeout=30_000)
        job_id = int(detail.get_attribute("data-job"))
        assert api.get(f"/jobs/{job_id}").json()["name"] == "hello"
        expect(detail).to_have_attribute("data-state", "succeeded", timeout=120_000)
        log = detail.locator(".yt-job-log")
        expect(log).to_have_attribute("data-follow", "done", timeout=30_000)
        assert log.inner_text().strip() == "42", log.inner_text()
        expect(detail.locator('.yt-job-field[data-field="exit_code"] .yt-job-field-value')).to_have_text("0")
        detail.locator(".yt-job-run-toggle").first.click()
        expect(detail.locator(".yt-job-run-record").first).to_contain_text("succeeded")
        screenshot(page, "lab-job-detail.png")

        # TensorBoard opens the server extension's route in a new tab
        page.evaluate("window.open = (url) => { window.__ytOpened = url; return null; }")
        detail.locator(".yt-job-tensorboard").click()
        opened = page.evaluate("window.__ytOpened")
        assert opened.endswith(f"/user/{USER}/yitong/jobs/{job_id}/tensorboard"), opened

        # Clone: the form opens with the spec as YAML in human units
        detail.locator(".yt-job-clone").click()
        clone = view(page, "form", str(job_id)).locator("form.yt-job-form")
        expect(clone.locator(".yt-job-form-name")).to_have_value("hello", timeout=30_000)
        cloned = clone.locator(".yt-job-form-yaml").input_value()
        assert "memory: 256Mi" in cloned and "cpu: 500m" in cloned, cloned
        assert "print(42)" in cloned and "vc: vision" in cloned, cloned
        expect(clone.locator(".yt-job-form-memory")).to_have_value("256Mi")

        # the job's tab by deep link, and a long job with one that has to wait behind it
        deep_link(page, lab, f"job/{job_id}")
        expect(view(page, "job", str(job_id)).locator(".yt-job-detail")).to_have_attribute(
            "data-state", "succeeded", timeout=60_000
        )
        free = api.get("/vcs/vision").json()["free"]["cpu"]
        big = max(1, int(free) - 1)
        deep_link(page, lab, "form")
        form = view(page, "form").locator("form.yt-job-form")
        expect(form.locator(".yt-job-form-vc")).to_have_value("vision", timeout=60_000)
        form.locator(".yt-job-form-yaml").fill(
            f"name: sleeper\nvc: vision\nenvironment: {{kernel: python3}}\n"
            f"command: [{json.dumps(sys.executable)}, -c, 'import time; time.sleep(300)']\n"
            f"cpu: {big}\nmemory: 256Mi\n"
        )
        form.locator(".yt-job-form-submit").click()
        sleeper_detail = page.locator(".yt-view[data-view=job] .yt-job-detail", has_text="sleeper")
        sleeper_detail.wait_for(timeout=30_000)
        sleeper = int(sleeper_detail.get_attribute("data-job"))
        expect(sleeper_detail).to_have_attribute("data-state", "running", timeout=60_000)
        r = api.post(
            "/jobs",
            json={
                "name": "waiter",
                "vc": "vision",
                "environment": {"kernel": "python3"},
                "command": [sys.executable, "-u", "-c", PROGRAM],
                "cpu": 2,
                "memory": "256Mi",
            },
        )
        assert r.status_code == 201, r.text
        waiter = r.json()["id"]
        deep_link(page, lab, "jobs")
        jobs = view(page, "jobs")
        waiting = jobs.locator(f'.yt-job[data-job="{waiter}"]')
        expect(waiting).to_have_attribute("data-state", "queued", timeout=30_000)
        expect(waiting.locator(".yt-job-position")).to_have_text("#1 in the queue")
        expect(waiting.locator(".yt-job-reason")).to_contain_text("cpu")
        screenshot(page, "lab-jobs.png")

        # the VC tab: usage and what runs there
        deep_link(page, lab, "vc/vision")
        vc = view(page, "vc", "vision")
        expect(vc.locator(f'.yt-vc-jobs .yt-job[data-job="{sleeper}"]')).to_be_visible(timeout=30_000)
        expect(vc.locator('.yt-vc[data-vc="vision"] .yt-resource[data-resource="cpu"]')).to_be_visible()
        screenshot(page, "lab-vc.png")
        saved_layout(stack, page, ["yitong:vc/vision"])  # before the next page load replaces the layout

        # Cancel the long job from its tab (opened from the Jobs list): the waiting job then runs
        deep_link(page, lab, "jobs")
        view(page, "jobs").locator(f'.yt-job[data-job="{sleeper}"]').click()
        sleeper_detail = view(page, "job", str(sleeper)).locator(".yt-job-detail")
        sleeper_detail.locator(".yt-job-cancel").click()
        expect(sleeper_detail).to_have_attribute("data-state", "cancelled", timeout=60_000)
        expect(sleeper_detail.locator(".yt-job-retry")).to_be_visible()
        deep_link(page, lab, f"job/{waiter}")
        waiter_detail = view(page, "job", str(waiter)).locator(".yt-job-detail")
        expect(waiter_detail).to_have_attribute("data-state", "succeeded", timeout=60_000)
        waiter_log = waiter_detail.locator(".yt-job-log")
        expect(waiter_log).to_have_attribute("data-follow", "done", timeout=30_000)
        expect(waiter_log).to_contain_text(f"line {LINES - 1}", timeout=30_000)
        lines = [line for line in waiter_log.inner_text().splitlines() if line]
        assert lines == [f"line {i}" for i in range(LINES)], lines

        # reloaded without a link, the open tabs come back (the layout restorer); JupyterLab saves
        # the layout to the server a moment after it changes: reload once it has
        saved_layout(stack, page, ["yitong:vc/vision", f"yitong:job/{job_id}", "yitong:datasets/"])
        page.goto(lab)
        expect(view(page, "vc", "vision")).to_have_count(1, timeout=120_000)
        expect(view(page, "job", str(job_id))).to_have_count(1)
        expect(view(page, "datasets")).to_have_count(1)
    finally:
        for job in api.get("/jobs", params={"user": USER}).json():
            if job["state"] not in TERMINAL:
                api.post(f"/jobs/{job['id']}/cancel")
        api.close()
        stack.stop_server(admin_token, USER)


def test_a_terminal_has_yt_acting_as_the_person(stack, admin_token, page):
    """getting-started's first hour: a JupyterLab terminal runs `yt whoami`, and the platform sees
    the person logged in with their VCs. Screenshot docs/img/lab-terminal.png."""
    import httpx
    from playwright.sync_api import expect

    with stack.hub(admin_token) as hub:
        r = hub.post(f"/users/{USER}/server", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code in (201, 202), r.text
    stack.wait_ready(admin_token, USER)
    server = httpx.Client(
        base_url=f"{stack.url}/user/{USER}/api", headers={"Authorization": f"token {stack.token(USER)}"}, timeout=60
    )
    try:
        lab = log_in(stack, page, USER)
        page.goto(f"{lab}?reset")  # a fresh layout: the last test left tabs whose updates re-render the launcher
        page.locator('.jp-SideBar [data-id="yitong-panel"]').wait_for(timeout=120_000)
        launcher_card(page, "Terminal", category="Other").click()
        terminal = page.locator(".jp-Terminal")
        expect(terminal).to_be_visible(timeout=120_000)
        page.wait_for_timeout(1000)  # the shell's prompt
        terminal.click()
        page.keyboard.type("clear; yt whoami | tee whoami.txt\n")
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline:
            r = server.get("/contents/whoami.txt", params={"content": 1})
            if r.status_code == 200 and "vcs" in (text := r.json()["content"]):
                break
            time.sleep(0.5)
        assert "name:" in text, f"yt whoami wrote {text!r}"
        fields = {k.rstrip(":"): v for k, v in (line.split(None, 1) for line in text.splitlines() if line.strip())}
        assert fields["name"] == USER and fields["admin"] == "no", text
        assert "vision" in fields["vcs"], text
        page.wait_for_timeout(500)
        screenshot(page, "lab-terminal.png")
    finally:
        server.close()
        stack.stop_server(admin_token, USER)
