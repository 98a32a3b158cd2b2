"""The job form's submit in a real browser (real ``jupyter lab``, headless Chromium) when the
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

FORM = ".yt-view[data-view=form] .yt-job-form"
FORM_STATE = f"""JSON.stringify({{
  state: document.querySelector('{FORM}')?.dataset.state ?? null,
  error: document.querySelector('{FORM} .yt-job-form-error')?.textContent,
  vcs: [...document.querySelectorAll('{FORM} .yt-job-form-vc option')].map(o => o.value),
  job: document.querySelector('.yt-view[data-view=job]')?.dataset.arg ?? null,
}})"""

# typed into the fields (input events: the fields rewrite the YAML that is submitted)
FILL_AND_SUBMIT = f"""(() => {{
  const form = document.querySelector('{FORM}');
  for (const [cls, value] of [['vc', 'vision'], ['name', 'panel-retry'], ['command', 'python train.py']]) {{
    const field = form.querySelector('.yt-job-form-' + cls);
    field.value = value;
    field.dispatchEvent(new Event('input', {{bubbles: true}}));
  }}
  form.querySelector('.yt-job-form-submit').click();
  return true;
}})()"""


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
    await page.send("Page.navigate", url=f"{lab}lab?token={TOKEN}&yt=form")  # the deep link to the form

    async def ready():
        return "vision" in json.loads(await page.eval(FORM_STATE))["vcs"]

    await wait_for(ready, timeout=120, what="the job form's VCs")
    await page.eval(FILL_AND_SUBMIT)

    async def finished():
        state = json.loads(await page.eval(FORM_STATE))
        # accepted: the form closes and the job's tab opens
        return state if state["state"] in ("done", "error") or state["job"] else None

    state = await wait_for(finished, timeout=60, what="the submit to finish")
    assert state["job"] and state["state"] in (None, "done"), state
    assert len(seen) == 2 and seen[0] == seen[1] and seen[0] and len(seen[0]) >= 32, seen
    await asyncio.sleep(0)
