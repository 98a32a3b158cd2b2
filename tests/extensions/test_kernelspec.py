"""kernels/yitong-python3: a real kernel started from the spec has ``%yt`` loaded."""

import json
import os
from pathlib import Path

import pytest
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def test_spec():
    spec = json.loads((KERNELS / "yitong-python3" / "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 (Yitong)"
    assert "--ext=yitong_lab" in spec["argv"]
    assert (KERNELS / "yitong-python3" / "logo-svg.svg").exists()


@pytest.fixture
def kernel(yt_env):
    ksm = KernelSpecManager(kernel_dirs=[str(KERNELS)], ensure_native_kernel=False)
    km = KernelManager(kernel_name="yitong-python3", kernel_spec_manager=ksm)
    km.start_kernel(env={**os.environ})
    client = km.blocking_client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)


def execute(client, code):
    out = []

    def hook(msg):
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] in ("error", "execute_result"):
            out.append(json.dumps(msg["content"], default=str))

    reply = client.execute_interactive(code, output_hook=hook, timeout=60)
    return reply["content"]["status"], "".join(out)


def test_kernel_has_yt_magic(kernel, vc_ls_text):
    assert execute(kernel, "print(get_ipython().find_line_magic('yt') is not None)") == ("ok", "True\n")
    assert execute(kernel, "%yt vc ls") == ("ok", vc_ls_text)
