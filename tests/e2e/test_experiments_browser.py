"""The Experiments views of JupyterLab in headless Chromium, against the real hub, platform service
and local job backend, on small real experiments whose trials are jobs: the launcher card opens
the list, a row opens the experiment, whose tab follows it live (trials appear, the state turns
``done`` without a reload), its charts show every complete trial, the pruned trial is marked on
the intermediate curves, importance names the parameters, the trials table sorts; a deep link
opens an experiment, Stop stops it, and a closed tab stops polling. Screenshot:
docs/img/lab-experiments.png (docs/hpo.md)."""

from __future__ import annotations

import re
import time

import pytest
from jobs_helpers import PY
from lab_browser import deep_link, launcher_card, log_in, screenshot, view

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.timeout(600)]

VIEWPORT = (1400, 1000)
USER = "alice"

# good trials climb the same curve (the median pruner keeps them) and end at a value of x and the
# activation; trials 2 and 5 report a poor curve, slowly, and Medianstop prunes them
TRIAL = """
import os, time
from yitong_lab import hpo
p = hpo.get_params()
seq = int(os.environ["NNI_TRIAL_SEQ_ID"])
bad = seq in (2, 5)
for i in range(8):
    hpo.report(0.1 if bad else 0.5 + 0.05 * i)
    time.sleep(0.6 if bad else 0.2)
hpo.report_final(1 - (p["x"] - 0.6) ** 2 - (0.1 if p["act"] == "tanh" else 0) - 0.01 * p["lr"])
"""


def experiment(name: str, code: str, **extra) -> dict:
    return {
        "name": name,
        "vc": "vision",
        "space": {
            "x": {"_type": "uniform", "_value": [0, 1]},
            "lr": {"_type": "loguniform", "_value": [0.001, 0.1]},
            "act": {"_type": "choice", "_value": ["relu", "tanh"]},
        },
        "tuner": {"name": "Random"},
        "assessor": {"name": "Medianstop", "args": {"start_step": 2}},
        "objective": {"metric": "default", "direction": "maximize"},
        "concurrency": 2,
        "max_trials": 8,
        "template": {
            "environment": {"kernel": "python3"},
            "command": [PY, "-c", code],
            "cpu": 0.5,
            "memory": "256Mi",
        },
        **extra,
    }


def test_experiments_view(stack, admin_token, page):
    from playwright.sync_api import expect

    with stack.hub(admin_token) as hub:
        r = hub.post(f"/users/{USER}/server", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code in (201, 202), r.text
    stack.wait_ready(admin_token, USER)
    api = stack.platform_client(stack.token(USER))
    r = api.post("/experiments", json=experiment("quadratic", TRIAL))
    assert r.status_code == 201, r.text
    exp_id = r.json()["id"]
    sleepy = None
    try:
        lab = log_in(stack, page, USER)
        polls: list[str] = []
        page.on("request", lambda req: polls.append(req.url) if "/yitong/api/experiments/" in req.url else None)

        # the launcher's card opens the list; its row opens the experiment, still running. A fresh
        # layout first: an earlier test may have left alice's workspace with tabs that poll
        page.goto(f"{lab}?reset")
        page.locator('.jp-SideBar [data-id="yitong-panel"]').wait_for(timeout=120_000)
        launcher_card(page, "Experiments").click()
        row = view(page, "experiments").locator(f'.yt-exp-row[data-experiment="{exp_id}"]')
        expect(row).to_be_visible(timeout=30_000)
        row.click()
        detail = view(page, "experiment", str(exp_id)).locator(".yt-experiment")
        expect(detail).to_be_visible(timeout=30_000)
        # live: the tab follows the experiment to its end with no reload
        expect(detail.locator("tr.yt-trial")).to_have_count(8, timeout=240_000)
        expect(detail).to_have_attribute("data-state", "done", timeout=240_000)
        exp = api.get(f"/experiments/{exp_id}").json()
        counts = exp["counts"]
        assert counts.get("pruned", 0) >= 1 and counts.get("complete", 0) >= 3, exp["trials"]
        complete = counts["complete"]
        expect(detail.locator(".yt-exp-summary")).to_contain_text(f"best default {exp['best']['value']:.3f}"[:17])

        # the charts: a dot and a parallel line per complete trial, the pruned ones marked
        expect(detail.locator(".yt-chart-best .yt-dot")).to_have_count(complete)
        expect(detail.locator(".yt-chart-parallel .yt-parallel-line")).to_have_count(complete)
        pruned = [t["number"] for t in exp["trials"] if t["state"] == "pruned"]
        for number in pruned:
            curve = detail.locator(f'.yt-chart-curves .yt-curve[data-trial="{number}"]')
            expect(curve).to_have_attribute("data-state", "pruned")
            expect(curve.locator(".yt-pruned-mark")).to_have_count(1)
        names = [n.text_content() for n in detail.locator(".yt-chart-parallel .yt-parallel-name").all()]
        assert names == ["x", "lr", "act", "default"], names
        expect(detail.locator(".yt-chart-importance .yt-importance-row")).to_have_count(3, timeout=30_000)

        # the table sorts: by the metric (best first), back by number
        detail.locator('th[data-sort="value"] button').click()
        expect(detail.locator('th[data-sort="value"]')).to_have_attribute("aria-sort", "descending")
        first = detail.locator("tr.yt-trial").first
        expect(first).to_have_attribute("data-trial", str(exp["best"]["number"]))
        pruned_row = detail.locator(f'tr.yt-trial[data-trial="{pruned[0]}"]')
        expect(pruned_row).to_have_attribute("data-state", "pruned")
        detail.evaluate("node => node.closest('.yt-view').scrollTo(0, 0)")
        screenshot(page, "lab-experiments.png")
        detail.locator('th[data-sort="number"] button').click()
        expect(detail.locator("tr.yt-trial").first).to_have_attribute("data-trial", "0")

        # a long experiment by deep link: polled while open, Stop stops it, a closed tab polls no more
        code = "import time; time.sleep(300)"
        r = api.post("/experiments", json=experiment("sleepy", code, assessor=None, max_trials=2))
        assert r.status_code == 201, r.text
        sleepy = r.json()["id"]
        deep_link(page, lab, f"experiment/{sleepy}")
        running = view(page, "experiment", str(sleepy)).locator(".yt-experiment")
        expect(running).to_have_attribute("data-state", "running", timeout=60_000)
        mine = re.compile(rf"/yitong/api/experiments/{sleepy}\?")
        deadline = time.monotonic() + 30
        while len([u for u in polls if mine.search(u)]) < 3:  # polled every LIVE_MS (2 s)
            assert time.monotonic() < deadline, polls
            page.wait_for_timeout(500)
        tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=f"Experiment {sleepy}")
        tab.locator(".lm-TabBar-tabCloseIcon").click()
        expect(running).to_have_count(0)
        page.wait_for_timeout(500)
        before = len([u for u in polls if mine.search(u)])
        page.wait_for_timeout(5000)
        assert len([u for u in polls if mine.search(u)]) == before, polls[-5:]

        deep_link(page, lab, f"experiment/{sleepy}")
        running = view(page, "experiment", str(sleepy)).locator(".yt-experiment")
        expect(running).to_have_attribute("data-state", "running", timeout=60_000)
        running.locator(".yt-exp-stop").click()
        expect(running).to_have_attribute("data-state", "stopped", timeout=60_000)
        expect(running.locator(".yt-exp-resume")).to_be_visible()
        sleepy = None
    finally:
        if sleepy is not None:
            api.post(f"/experiments/{sleepy}/stop")
        api.close()
        stack.stop_server(admin_token, USER)  # the session's later tests start alice's server themselves
