"""`yt` in a terminal and `%yt` in a notebook kernel print the same, against the real service;
admin verbs change VCs."""

from __future__ import annotations

import pytest
from helpers import run_in_kernel

pytestmark = pytest.mark.e2e


def test_magic_prints_what_the_cli_prints(stack, alice_token):
    cli = stack.yt(alice_token, "vc", "ls").stdout
    assert "vision" in cli and "nlp" not in cli
    # the yitong-python3 kernelspec loads the magics itself: no %load_ext needed
    magic = run_in_kernel(stack.cli_env(alice_token), "%yt vc ls")
    assert magic == cli


def test_cli_admin_verbs_and_refusals(stack, admin_token, alice_token):
    r = stack.yt(alice_token, "vc", "create", "rogue", "--quota", "cpu=1", check=False)
    assert r.returncode == 1 and "admin" in r.stderr.lower()
    stack.yt(
        admin_token,
        "vc",
        "create",
        "audio",
        "--quota",
        "cpu=2,memory=4Gi,nvidia.com/gpu=0",
        "--group",
        "vision",
        "--profile",
        "cpu-small",
        "--description",
        "Audio team",
    )
    assert "audio" in stack.yt(alice_token, "vc", "ls").stdout
    stack.yt(admin_token, "vc", "edit", "audio", "--quota", "cpu=3,memory=4Gi")
    shown = stack.yt(admin_token, "vc", "show", "audio", "--json").stdout
    assert '"cpu": 3' in shown.replace("3.0", "3")
    stack.yt(admin_token, "vc", "rm", "audio", "--yes")
    assert "audio" not in stack.yt(alice_token, "vc", "ls").stdout
    r = stack.yt(alice_token, "vc", "show", "nlp", check=False)
    assert r.returncode == 1 and "nlp" in r.stderr
