"""End-to-end fixtures: one real embedded platform for the whole e2e session.

Fixtures:

- ``stack``: a running :class:`stack.Stack` (hub + proxy + platform service + local spawner)
  with two VCs: ``vision`` (groups ``vision``; 1 fake GPU; profiles cpu-small, gpu-1, npu-1)
  and ``nlp`` (group ``nlp``; profile nlp-cpu). Users: ``admin`` (hub admin), ``alice`` and
  ``carol`` (vision), ``bob`` (nlp), ``u0``..``u19`` (vision, no password: the admin spawns
  for them).
  The SSH gateway listens on ``stack.ssh_port``.
- ``admin_token``, ``alice_token``, ``bob_token``: hub API tokens.
- ``page``: a Playwright page in headless Chromium (``$YITONG_TEST_CHROMIUM``, default
  ``/usr/bin/chromium``); its viewport is the test module's ``VIEWPORT``, else 1280x800.
"""

from __future__ import annotations

import os

import pytest
from helpers import require
from stack import Stack

CHROMIUM = os.environ.get("YITONG_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

PROFILES = {
    "cpu-small": {
        "display_name": "CPU small",
        "description": "Python 3",
        "image": "yitong/singleuser-cpu",
        "kernel": "python3",
        "cpu": 0.5,
        "memory": "1Gi",
    },
    "gpu-1": {
        "display_name": "One GPU",
        "description": "CUDA",
        "image": "yitong/singleuser-cuda",
        "kernel": "python3",
        "cpu": 0.5,
        "memory": "1Gi",
        "accelerator": {"type": "nvidia.com/gpu", "count": 1},
    },
    "npu-1": {
        "display_name": "One Ascend NPU",
        "description": "MindSpore",
        "image": "yitong/singleuser-ascend",
        "kernel": "python3",
        "cpu": 0.5,
        "memory": "1Gi",
        "accelerator": {"type": "huawei.com/Ascend910", "count": 1},
        "arch": "arm64",
    },
    "nlp-cpu": {
        "display_name": "NLP CPU",
        "description": "Transformers",
        "image": "yitong/singleuser-cpu",
        "kernel": "python3",
        "cpu": 0.5,
        "memory": "1Gi",
    },
}
WORKERS = [f"u{i}" for i in range(20)]
SETTINGS = {
    "backend": "local",
    "hub": {"admin_users": ["admin"], "start_concurrency": 2},
    # single-person (fixed user names; no system accounts): tests/e2e/test_confinement.py runs multi-user
    "backends": {"local": {"inventory": {"nvidia.com/gpu": 1}, "mode": "single-person"}},
    "profiles": PROFILES,
    "vcs": {
        "vision": {
            "description": "Computer vision <b>team</b>",
            "quota": {"cpu": 16, "memory": "32Gi", "nvidia.com/gpu": 1},
            "groups": ["vision"],
            "profiles": ["cpu-small", "gpu-1", "npu-1"],
        },
        "nlp": {
            "description": "Language team",
            "quota": {"cpu": 2, "memory": "4Gi"},
            "groups": ["nlp"],
            "profiles": ["nlp-cpu"],
        },
    },
    "groups": {"vision": ["alice", "carol", *WORKERS], "nlp": ["bob"]},
    "ssh": {},  # the gateway on a free port (Stack.ssh_port)
}
PASSWORDS = {"admin": "admin-pw-e2e", "alice": "alice-pw-e2e", "bob": "bob-pw-e2e", "carol": "carol-pw-e2e"}


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("stack"), SETTINGS, PASSWORDS).start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def admin_token(stack):
    return stack.token("admin")


@pytest.fixture(scope="session")
def alice_token(stack):
    return stack.token("alice")


@pytest.fixture(scope="session")
def bob_token(stack):
    return stack.token("bob")


@pytest.fixture
def page(request):
    require("Chromium", os.path.exists(CHROMIUM), CHROMIUM)
    from playwright.sync_api import sync_playwright

    width, height = getattr(request.module, "VIEWPORT", (1280, 800))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": width, "height": height})
        yield context.new_page()
        browser.close()
