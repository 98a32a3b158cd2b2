"""kernels/ipython/ipython_kernel_config.py: ``make install`` puts it in the venv's etc/ipython, so
the default "Python 3" kernel -- not only "Python 3 (Yitong)" -- has ``%yt``, loaded lazily."""

import sys
from pathlib import Path

import pytest
from jupyter_client import KernelManager

from tests.extensions.test_kernelspec import execute

SOURCE = Path(__file__).resolve().parents[2] / "kernels" / "ipython" / "ipython_kernel_config.py"
INSTALLED = Path(sys.prefix) / "etc" / "ipython" / "ipython_kernel_config.py"


def test_installed_in_the_venv():
    assert INSTALLED.read_text() == SOURCE.read_text(), "run `make install`"


@pytest.fixture
def python3_kernel():
    km = KernelManager(kernel_name="python3")  # the native kernel: this interpreter, sys.prefix/etc/ipython
    km.start_kernel()
    client = km.blocking_client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)


def test_default_python3_kernel_has_yt_magic_lazily(python3_kernel):
    assert execute(python3_kernel, "print(get_ipython().find_line_magic('yt') is not None)") == ("ok", "True\n")
    # registering the magic imports neither the SDK nor its HTTP client
    status, out = execute(
        python3_kernel, "import sys; print(sorted(m for m in ('httpx', 'yitong_lab.client') if m in sys.modules))"
    )
    assert (status, out) == ("ok", "[]\n")
