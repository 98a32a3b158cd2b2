"""`yt` in a terminal and `%yt` in a notebook kernel print the same, against the real service;
admin verbs change VCs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

YT = str(Path(sys.executable).parent / "yt")


def env_for(stack, token):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("YITONG_", "JUPYTERHUB_"))}
    env.update(YT_API_URL=stack.platform, YT_TOKEN=token)
    return env


def yt(stack, token, *args, check=True):
    return subprocess.run([YT, *args], env=env_for(stack, token), capture_output=True, text=True,
                          timeout=60, check=check)


def run_in_kernel(env, code: str) -> str:
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="yitong-python3", env=env)
    try:
        out: list[str] = []

        def collect(msg):
            if msg["header"]["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["header"]["msg_type"] == "error":
                out.append("\n".join(msg["content"]["traceback"]))

        reply = kc.execute_interactive(code, output_hook=collect, timeout=60)
        assert reply["content"]["status"] == "ok", out
        return "".join(out)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_magic_prints_what_the_cli_prints(stack, alice_token):
    cli = yt(stack, alice_token, "vc", "ls").stdout
    assert "vision" in cli and "nlp" not in cli
    # the yitong-python3 kernelspec loads the magics itself: no %load_ext needed
    magic = run_in_kernel(env_for(stack, alice_token), "%yt vc ls")
    assert magic == cli


def test_cli_admin_verbs_and_refusals(stack, admin_token, alice_token):
    r = yt(stack, alice_token, "vc", "create", "rogue", "--quota", "cpu=1", check=False)
    assert r.returncode == 1 and "admin" in r.stderr.lower()
    yt(stack, admin_token, "vc", "create", "audio", "--quota", "cpu=2,memory=4Gi,nvidia.com/gpu=0",
       "--group", "vision", "--profile", "cpu-small", "--description", "Audio team")
    assert "audio" in yt(stack, alice_token, "vc", "ls").stdout
    yt(stack, admin_token, "vc", "edit", "audio", "--quota", "cpu=3,memory=4Gi")
    shown = yt(stack, admin_token, "vc", "show", "audio", "--json").stdout
    assert '"cpu": 3' in shown.replace("3.0", "3")
    yt(stack, admin_token, "vc", "rm", "audio", "--yes")
    assert "audio" not in yt(stack, alice_token, "vc", "ls").stdout
    r = yt(stack, alice_token, "vc", "show", "nlp", check=False)
    assert r.returncode == 1 and "nlp" in r.stderr
