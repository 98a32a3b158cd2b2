"""The Models view of JupyterLab in headless Chromium, against the real hub, platform service, local
job backend and MLServer: a scikit-learn model trained by two real jobs on a committed dataset
(in MLServer's own environment, ``make mlserver``), registered from the jobs with ``yt model``,
aliased and deployed with ``yt deploy``; the view opens from the launcher and by its deep link
(``?yt=models/vision``), lists the model, shows its versions, compares their metrics (the
compare route), draws the lineage graph (dataset, code, job -> version), shows the endpoint
ready, and its "try it" form sends a V2 request through the platform's endpoint route and
shows the answer, and a refused request's sentence. A person of the VC sees no keys control;
an admin, in their own JupyterLab, issues a key (its secret shown once, copied with the copy
button), sees it listed, calls the endpoint with it, and revokes it. Screenshots:
docs/img/lab-models.png, docs/img/lab-models-keys.png."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import httpx
import pytest
from lab_browser import launcher_card, log_in, screenshot, view

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
MLSERVER_PY = ROOT / ".venv-mlserver" / "bin" / "python"
VIEWPORT = (1400, 1000)
USER = "carol"  # the person in the browser
SIGNATURE = {
    "inputs": [{"name": "predict", "datatype": "FP32", "shape": [-1, 4]}],
    "outputs": [{"name": "predict", "datatype": "INT64", "shape": [-1, 1]}],
}
# a job of MLServer's environment: reads the dataset's CSV, fits, saves under its outputs, and
# posts its accuracy as any job may (POST /jobs/{id}/metrics with the job's own token)
TRAIN = """
import csv, json, os, pathlib, urllib.request
import joblib, numpy as np
from sklearn.linear_model import LogisticRegression
rows = list(csv.reader(open(pathlib.Path(os.environ["YITONG_INPUT_DATA"], "iris.csv"))))
x = np.array([[float(v) for v in r[:4]] for r in rows], dtype="float32")
y = np.array([int(r[4]) for r in rows])
model = LogisticRegression(C=float(os.environ["C"]), max_iter=500).fit(x, y)
out = pathlib.Path(os.environ["YITONG_OUTPUT_DIR"], "model")
out.mkdir(parents=True)
joblib.dump(model, out / "model.joblib")
body = json.dumps({"accuracy": float(model.score(x, y)), "C": float(os.environ["C"])}).encode()
request = urllib.request.Request(
    os.environ["YITONG_API_URL"].rstrip("/") + "/jobs/" + os.environ["YITONG_JOB_ID"] + "/metrics",
    data=body, method="POST",
    headers={"Authorization": "token " + os.environ["YITONG_JOB_TOKEN"], "Content-Type": "application/json"},
)
urllib.request.urlopen(request, timeout=30).read()
"""
ROWS = [[0.5, 1.0, 2.0, -1.0], [-2.0, -1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]


def iris_csv(folder: Path) -> None:
    rng = random.Random(0)
    lines = []
    for _ in range(300):
        x = [round(rng.gauss(0, 1), 3) for _ in range(4)]
        lines.append(",".join(map(str, [*x, int(x[0] + 2 * x[1] > 0) + int(x[2] > 1)])))
    folder.mkdir()
    (folder / "iris.csv").write_text("\n".join(lines) + "\n")


def train(api, c: float) -> int:
    spec = {
        "name": f"train-iris-c{str(c).replace('.', '-')}",
        "vc": "vision",
        "environment": {"kernel": "python3"},
        "command": [str(MLSERVER_PY), "-c", TRAIN],
        "env": {"C": str(c)},
        "inputs": [{"dataset": "vision/iris-data@1", "mount": "data"}],
        "code": {"commit": "3f9a2c1e0b7d4e5f6a8b9c0d1e2f3a4b5c6d7e8f"},
        "cpu": 1,
        "memory": "512Mi",
    }
    r = api.post("/jobs", json=spec)
    assert r.status_code == 201, r.text
    job = r.json()["id"]
    deadline = time.monotonic() + 180
    while (state := api.get(f"/jobs/{job}").json())["state"] not in ("succeeded", "failed", "cancelled"):
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    assert state["state"] == "succeeded", state
    return job


def test_models_view(stack, admin_token, alice_token, page, tmp_path):
    from playwright.sync_api import expect

    # alice trains, registers and deploys (carol's own job list stays empty for the Jobs tests);
    # carol, of the same VC, uses the view
    token = alice_token
    api = stack.platform_client(token)
    with stack.hub(admin_token) as hub:
        r = hub.post(f"/users/{USER}/server", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code in (201, 202), r.text
    try:
        # the data, two training jobs on it, two versions registered from them, an alias, an endpoint
        iris_csv(tmp_path / "data")
        stack.yt(token, "data", "commit", str(tmp_path / "data"), "vision/iris-data", "-m", "300 flowers")
        first, second = train(api, 0.05), train(api, 1.0)
        (tmp_path / "sig.json").write_text(json.dumps(SIGNATURE))
        for job, message in ((first, "C=0.05"), (second, "C=1")):
            stack.yt(
                token, "model", "register", "vision/iris-lab", "--from-job", str(job), "--path", "model",
                "--framework", "sklearn", "--format", "joblib", "--signature", str(tmp_path / "sig.json"),
                "-m", message,
            )  # fmt: skip
        stack.yt(token, "model", "alias", "vision/iris-lab@2", "production")
        stack.yt(token, "deploy", "create", "iris-lab", "vision/iris-lab@production", "--profile", "cpu-small")
        direct = api.post("/endpoints/iris-lab/v2/models/iris-lab/infer", json={
            "inputs": [{"name": "predict", "datatype": "FP32", "shape": [3, 4], "data": sum(ROWS, [])}]
        })  # fmt: skip
        assert direct.status_code == 200, direct.text
        expected = direct.json()["outputs"][0]["data"]
        accuracy = {v["number"]: v["metrics"]["accuracy"] for v in api.get("/models/vision/iris-lab/versions").json()}

        stack.wait_ready(admin_token, USER)
        lab = log_in(stack, page, USER)

        # the launcher's Models card opens the view of this server's VC; a fresh layout first (an
        # earlier browser test may have left carol's workspace with tabs whose updates re-render the launcher)
        page.goto(f"{lab}?reset")
        page.locator('.jp-SideBar [data-id="yitong-panel"]').wait_for(timeout=120_000)
        launcher_card(page, "Models").click()
        expect(view(page, "models").locator('.yt-model[data-model="vision/iris-lab"]')).to_be_visible(timeout=30_000)

        # by deep link: the VC's models, the first picked
        page.goto(f"{lab}?yt=models/vision")
        models = view(page, "models", "vision")
        expect(models.locator(".yt-models-vc")).to_have_value("vision", timeout=120_000)
        expect(models.locator('.yt-model.yt-selected[data-model="vision/iris-lab"]')).to_contain_text("2 versions")
        detail = models.locator('.yt-model-detail[data-model="vision/iris-lab"]')
        expect(detail.locator('.yt-model-alias[data-alias="production"]')).to_have_text("production → v2")
        expect(detail.locator(".yt-model-version")).to_have_count(2)
        expect(detail.locator('.yt-model-version[data-version="2"]')).to_contain_text("C=1")

        # metrics side by side: both versions, every metric
        detail.locator(".yt-model-version-select").nth(0).check()
        detail.locator(".yt-model-version-select").nth(1).check()
        detail.locator(".yt-model-compare-button").click()
        row = detail.locator('.yt-model-compare tr[data-metric="accuracy"]')
        expect(row.locator('td[data-version="1"]')).to_have_text(f"{accuracy[1]:.4g}")
        expect(row.locator('td[data-version="2"]')).to_have_text(f"{accuracy[2]:.4g}")
        expect(detail.locator('.yt-model-compare tr[data-metric="C"] td[data-version="1"]')).to_have_text("0.05")

        # lineage of the selected (newest) version: dataset and code -> job -> version
        lineage = detail.locator('.yt-model-lineage[data-version="2"]')
        expect(lineage.locator('g[data-node="job"]')).to_contain_text(f"job {second}")
        expect(lineage.locator('g[data-node="dataset-0"]')).to_contain_text("vision/iris-data@1")
        expect(lineage.locator('g[data-node="code"]')).to_contain_text("code 3f9a2c1e0b")
        expect(lineage.locator("path.yt-lineage-edge")).to_have_count(3)
        detail.locator('.yt-model-version[data-version="1"] .yt-model-version-label').click()
        expect(detail.locator('.yt-model-lineage[data-version="1"] g[data-node="job"]')).to_contain_text(f"job {first}")

        # the endpoint, ready; try it: rows of the one input, the answer as the route gives it
        endpoint = detail.locator('.yt-endpoint[data-endpoint="iris-lab"]')
        expect(endpoint).to_have_attribute("data-state", "ready", timeout=30_000)
        expect(endpoint).to_contain_text("v2")
        expect(endpoint.locator(".yt-endpoint-replicas")).to_have_text("1 of 1 replica ready")
        expect(endpoint.locator(".yt-endpoint-keys")).to_have_count(0)  # carol is no admin
        form = detail.locator(".yt-tryit")
        expect(form.locator(".yt-tryit-endpoint")).to_have_value("iris-lab")
        example = json.loads(form.locator(".yt-tryit-request").input_value())
        assert example["inputs"][0]["shape"] == [1, 4], example
        form.locator(".yt-tryit-request").fill(json.dumps(ROWS))
        form.locator(".yt-tryit-send").click()
        answer = form.locator(".yt-tryit-response")
        expect(answer).to_have_attribute("data-state", "ok", timeout=30_000)
        expect(answer.locator(".yt-tryit-lines")).to_contain_text(
            "predict INT64 [3, 1]: " + ", ".join(str(v) for v in expected)
        )
        if page.locator("#jp-left-stack").is_visible():
            page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()  # folds it
        answer.scroll_into_view_if_needed()
        screenshot(page, "lab-models.png")

        # a request the signature refuses: the platform's sentence, not a server error
        form.locator(".yt-tryit-request").fill("[[1, 2, 3]]")
        form.locator(".yt-tryit-send").click()
        expect(answer).to_have_attribute("data-state", "error", timeout=30_000)
        expect(answer).to_contain_text("has shape [1, 3]; the model takes [-1, 4]")
        # and what is not a request at all is named before anything is sent
        form.locator(".yt-tryit-request").fill("[[1, 2], [3]]")
        form.locator(".yt-tryit-send").click()
        expect(answer).to_contain_text("the rows are not all of one length")

        # an admin, in their own JupyterLab: issue a key (shown once, copied), list, use, revoke
        with stack.hub(admin_token) as hub:
            r = hub.post("/users/admin/server", json={"vc": "vision", "profile": "cpu-small"})
            assert r.status_code in (201, 202), r.text
        stack.wait_ready(admin_token, "admin")
        page.context.clear_cookies()
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        admin_lab = log_in(stack, page, "admin")
        page.goto(f"{admin_lab}?yt=models/vision")
        detail = view(page, "models", "vision").locator('.yt-model-detail[data-model="vision/iris-lab"]')
        keys = detail.locator('.yt-endpoint[data-endpoint="iris-lab"] .yt-endpoint-keys')
        keys.locator(".yt-endpoint-keys-toggle").click(timeout=120_000)
        expect(keys.locator(".yt-endpoint-keys-panel")).to_contain_text("No keys")
        keys.locator(".yt-endpoint-key-note").fill("partner A")
        keys.locator(".yt-endpoint-key-issue").click()
        secret = keys.locator('.yt-endpoint-key-secret[data-key-id="1"]')
        expect(secret).to_be_visible(timeout=30_000)
        key = secret.locator(".yt-endpoint-key-secret-value").input_value()
        assert key.startswith("yte_") and len(key) == 47, key
        listed = keys.locator('.yt-endpoint-key[data-key-id="1"]')
        expect(listed).to_have_attribute("data-state", "in-use")
        expect(listed).to_contain_text(f"{key[:12]}... · partner A · admin")
        assert key not in keys.locator(".yt-endpoint-key-list").inner_text()  # listed by its prefix only
        secret.locator(".yt-endpoint-key-copy").click()
        expect(secret.locator(".yt-endpoint-key-copied")).to_have_text("copied")
        assert page.evaluate("navigator.clipboard.readText()") == key
        keys.scroll_into_view_if_needed()
        screenshot(page, "lab-models-keys.png")
        infer = {"inputs": [{"name": "predict", "datatype": "FP32", "shape": [1, 4], "data": ROWS[0]}]}
        url = f"{stack.platform}/endpoints/iris-lab/v2/models/iris-lab/infer"
        assert httpx.post(url, json=infer, headers={"Authorization": f"Bearer {key}"}).status_code == 200
        # dismissed, the secret leaves the page (it is never shown again); revoked, the key is refused
        secret.locator(".yt-endpoint-key-done").click()
        expect(secret).to_be_hidden()
        listed.locator(".yt-endpoint-key-revoke").click()
        expect(listed).to_have_attribute("data-state", "revoked", timeout=30_000)
        expect(listed.locator(".yt-endpoint-key-revoke")).to_have_count(0)
        assert httpx.post(url, json=infer, headers={"Authorization": f"Bearer {key}"}).status_code == 401
    finally:
        api.delete("/endpoints/iris-lab")
        api.close()
        stack.stop_server(admin_token, USER)
        stack.stop_server(admin_token, "admin")
