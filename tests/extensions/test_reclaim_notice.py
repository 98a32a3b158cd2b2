"""The reclaim notification's pure helpers (extensions/src/reclaimNotice.ts) run by node on the
compiled module (extensions/lib, built by `make install`): the sentence, what is new since the
last poll, and the query for this server's own warnings. No browser: the notification itself
is JupyterLab's (Notification.warning, extensions/src/reclaim.ts); the route it reads is tested in
tests/services/ops/test_reclaim.py and end to end in tests/e2e/test_reclaim.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import require

LIB = Path(__file__).resolve().parents[2] / "extensions" / "lib" / "reclaimNotice.js"
WARNING = {
    "ref": "alice/gpu",
    "server": "gpu",
    "vc": "vision",
    "devices": {"nvidia.com/gpu": 1},
    "reason": "idle with an accelerator: stopped in 600 s unless used",
    "measured": "GPU 0 0% on n1, 3 s ago",
    "warned_at": 1000.0,
    "stop_at": 1600.0,
}


def run(expression: str):
    """`expression` evaluated by node with reclaimNotice's exports in scope; its JSON value."""
    require("node", shutil.which("node") is not None, "apt-get install nodejs")
    require("the compiled extension", LIB.exists(), "make install")
    script = (
        f"import * as r from {json.dumps(LIB.as_uri())};\n"
        "const { noticeText, toShow, warningKey, warningsPath, remaining } = r;\n"
        f"const W = {json.dumps(WARNING)};\n"
        f"process.stdout.write(JSON.stringify({expression}));\n"
    )
    out = subprocess.run(
        ["node", "--no-warnings", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    "now,sentence",
    [
        (
            1000,
            "This server's 1 nvidia.com/gpu is idle: it will be stopped in about 10 min unless you use it (VC vision).",
        ),
        (1550, "in about 50 s"),
        (1700, "at the next check"),
    ],
)
def test_notice_text(now, sentence):
    assert sentence in run(f"noticeText(W, {now})")


def test_the_sentence_fits_a_toast():
    """JupyterLab's toasts cut a message at 140 characters."""
    many = {"nvidia.com/gpu": 8}
    text = run(f"noticeText({{...W, vc: 'v' + 'x'.repeat(30), devices: {json.dumps(many)}}}, 1000)")
    assert "8 nvidia.com/gpu are idle" in text and len(text) <= 140


def test_each_warning_shows_once_and_a_new_warning_of_the_same_server_again():
    first = run("toShow([W], new Set())")
    assert [w["ref"] for w in first["fresh"]] == ["alice/gpu"]
    again = run("(() => { const s = toShow([W], new Set()).keep; return toShow([W], s).fresh.length; })()")
    assert again == 0
    later = run(
        "(() => { const s = toShow([W], new Set()).keep;"
        " return toShow([{...W, warned_at: 5000}], s).fresh.map(warningKey); })()"
    )
    assert later == ["alice/gpu@5000"]  # used, then idle again: warned anew, shown anew


@pytest.mark.parametrize(
    "user,server,path",
    [
        ("alice", "gpu", "yitong/api/reclaim/warnings?server=gpu"),
        ("alice", "", "yitong/api/reclaim/warnings?server="),
        ("alice", "a b&c", "yitong/api/reclaim/warnings?server=a%20b%26c"),
        ("", "", "yitong/api/reclaim/warnings"),  # not under JupyterHub: every warning of the caller
    ],
)
def test_warnings_path(user, server, path):
    assert run(f"warningsPath({json.dumps(user)}, {json.dumps(server)})") == path
