"""The Jobs panel's submit in a real browser (real ``jupyter lab``, headless Chromium) when the
platform's answer is lost after it created the job: the panel retries with the same
``Idempotency-Key``. The stand-in platform (conftest) drops the connection after handling the
first submit; the server extension turns that into a 502; the panel sends again with the key.
That the real service then makes one job: tests/services/core/test_idempotency.py."""

import asyncio
import io
import json
import socket

import jobs_standin
import pytest
from test_panel_browser import TOKEN, lab, page, wait_for  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

FORM_STATE = """JSON.stringify({
  state: document.querySelector('#yitong-panel .yt-job-form')?.dataset.state ?? null,
  error: document.querySelector('#yitong-panel .yt-job-form-error')?.textContent,
  vcs: [...document.querySelectorAll('#yitong-panel .yt-job-form-vc option')].map(o => o.value),
})"""

FILL_AND_SUBMIT = """(() => {
  document.querySelector('#yitong-panel .yt-job-new').click();
  const form = document.querySelector('#yitong-panel .yt-job-form');
  form.querySelector('.yt-job-form-vc').value = 'vision';
  form.querySelector('.yt-job-form-name').value = 'panel-retry';
  form.querySelector('.yt-job-form-command').value = 'python train.py';
  form.querySelector('.yt-job-form-submit').click();
  return true;
})()"""


async def test_panel_submit_is_retried_with_the_same_key(yt_env, lab, page, monkeypatch):  # noqa: F811
    seen = []
    original = jobs_standin.handle

    def flaky(h, state, auth, route, users, vcs):
        if route == "/jobs" and h.command == "POST":
            seen.append(h.headers.get("Idempotency-Key"))
            if len(seen) == 1:  # the job is made; its answer never reaches the server extension
                real, h.wfile = h.wfile, io.BytesIO()
                original(h, state, auth, route, users, vcs)
                h.wfile, h.close_connection = real, True
                h.connection.shutdown(socket.SHUT_RDWR)
                return None
        return original(h, state, auth, route, users, vcs)

    monkeypatch.setattr(jobs_standin, "handle", flaky)
    await page.send("Page.navigate", url=f"{lab}lab?token={TOKEN}")

    async def ready():
        return "vision" in json.loads(await page.eval(FORM_STATE))["vcs"]

    await wait_for(ready, timeout=120, what="the job form's VCs")
    await page.eval(FILL_AND_SUBMIT)

    async def finished():
        state = json.loads(await page.eval(FORM_STATE))
        return state if state["state"] in ("done", "error") else None

    state = await wait_for(finished, timeout=60, what="the submit to finish")
    assert state["state"] == "done", state
    assert len(seen) == 2 and seen[0] == seen[1] and seen[0] and len(seen[0]) >= 32, seen
    await asyncio.sleep(0)
