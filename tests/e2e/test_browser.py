"""A person in headless Chromium: log in, see the picker with a disabled over-quota profile
and its reason, start a CPU profile, find the Yitong panel in JupyterLab, upload a folder from
its Datasets tab."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


def test_picker_spawn_and_panel(stack, admin_token, page, tmp_path):
    # someone else in the VC holds its only GPU
    with stack.hub(admin_token) as hub:
        assert hub.post("/users/u7/server", json={"vc": "vision", "profile": "gpu-1"}).status_code in (201, 202)
    stack.wait_ready(admin_token, "u7")
    try:
        page.goto(f"{stack.url}/hub/login")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", stack.passwords["alice"])
        page.click("input[type=submit], button[type=submit]")
        page.goto(f"{stack.url}/hub/spawn")

        gpu = page.locator('label.yt-profile[data-vc="vision"][data-profile="gpu-1"]')
        assert "yt-profile-disabled" in gpu.get_attribute("class")
        assert gpu.locator("input").is_disabled()
        assert gpu.locator(".yt-reason").inner_text() == "VC vision: 1 of 1 nvidia.com/gpu in use"
        npu = page.locator('label.yt-profile[data-profile="npu-1"] .yt-reason')
        assert "huawei.com/Ascend910" in npu.inner_text()
        assert page.locator('fieldset.yt-vc[data-vc="nlp"]').count() == 0
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS_IMG / "picker.png"), full_page=True)

        page.check("#yt-profile-vision__cpu-small")
        page.click("#spawn_form input[type=submit], #spawn_form button[type=submit]")
        page.wait_for_url("**/user/alice/lab**", timeout=120_000)
        tab = page.locator('.jp-SideBar [data-id="yitong-panel"]')
        tab.wait_for(timeout=120_000)
        if not page.locator("#yitong-panel").is_visible():
            tab.click()
        card = page.locator('#yitong-panel .yt-vc[data-vc="vision"]')
        card.wait_for(timeout=60_000)
        assert page.locator('#yitong-panel .yt-vc[data-vc="nlp"]').count() == 0
        gpu_row = card.locator('.yt-resource[data-resource="nvidia.com/gpu"]')
        assert gpu_row.get_attribute("data-used") == "1" and gpu_row.get_attribute("data-quota") == "1"
        page.screenshot(path=str(DOCS_IMG / "lab-panel.png"))

        # the Datasets tab (the sidebar's Datasets button): upload a folder into the real service's store
        folder = tmp_path / "leaves"
        (folder / "healthy").mkdir(parents=True)
        for i in range(5):
            (folder / "healthy" / f"{i}.txt").write_text(f"leaf {i}\n")
        page.click("#yitong-panel .yt-open-datasets")
        datasets = page.locator(".yt-view[data-view=datasets]")
        datasets.locator(".yt-upload-dataset").click()  # focusing prefills this server's VC
        page.keyboard.type("leaves")
        assert datasets.locator(".yt-upload-dataset").input_value() == "vision/leaves"
        datasets.locator(".yt-upload-message").fill("from the browser")
        datasets.locator(".yt-upload input[type=file]").set_input_files(str(folder))
        datasets.locator(".yt-upload-button").click()
        upload = datasets.locator(".yt-upload")
        for _ in range(240):
            if upload.get_attribute("data-state") in ("done", "error"):
                break
            page.wait_for_timeout(250)
        status = datasets.locator(".yt-upload-status").inner_text()
        assert upload.get_attribute("data-state") == "done", status
        datasets.locator('.yt-dataset[data-dataset="vision/leaves"]').wait_for(timeout=30_000)
        with stack.platform_client(stack.token("alice")) as api:
            [version] = api.get("/datasets/vision/leaves/versions").json()
            manifest = api.get("/datasets/vision/leaves/versions/1/manifest").json()
        assert version["message"] == "from the browser" and version["author"] == "alice"
        assert sorted(f["path"] for f in manifest["files"]) == [f"healthy/{i}.txt" for i in range(5)]
    finally:
        stack.stop_server(admin_token, "u7")
        stack.stop_server(admin_token, "alice")
