"""docs/login.md's step to set a new password works verbatim: `.venv/bin/yitong-passwd set alice
--generate` run from the checkout (with `YITONG_DATA_DIR` naming the running hub's data directory)
prints a password that logs in through the real hub at once. The README's `yitong-passwd add`
commands are run as written by tests/e2e/test_first_start.py."""

from __future__ import annotations

import os
import re
import subprocess

import httpx
import pytest
from stack import ROOT

pytestmark = pytest.mark.e2e

README_STEP = ".venv/bin/yitong-passwd set alice --generate"


def test_readme_step_then_login(stack):
    assert f"`{README_STEP}`" in (ROOT / "docs" / "login.md").read_text()
    old = stack.passwords["alice"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("YITONG_")}
    env["YITONG_DATA_DIR"] = str(stack.data_dir)
    out = subprocess.run(
        README_STEP, check=False, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    [password] = re.findall(r"^Password for alice: (\S+)$", out.stdout, re.MULTILINE)
    stack.passwords["alice"] = password
    with stack.login("alice") as browser:  # raises unless the hub logged alice in
        assert browser.get("/hub/api/user", headers={"X-XSRFToken": stack.xsrf(browser)}).json()["name"] == "alice"
    with httpx.Client(base_url=stack.url, follow_redirects=True, timeout=60) as client:
        r = client.get("/hub/login")
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', r.text).group(1)
        r = client.post("/hub/login", data={"username": "alice", "password": old, "_xsrf": xsrf})
        assert "/hub/login" in str(r.url) and r.status_code == 403, "the old password still works"
