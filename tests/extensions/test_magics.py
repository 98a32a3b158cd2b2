"""``%yt``: instant to load, prints what ``yt`` prints, errors without a traceback."""

import json
import os
import subprocess
import sys

import pytest
from helpers import ipython

HEAVY = ("httpx", "jupyter_server", "ipywidgets", "tornado", "IPython", "traitlets")


def python(code, **env):
    environ = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=60)


def test_import_is_cheap():
    code = (
        "import sys, yitong_lab, yitong_lab.magics, yitong_lab.client, yitong_lab.cli.grammar\n"
        "yitong_lab.cli.grammar.build_parser()\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = python(code)
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr


def test_magic_prints_what_the_cli_prints(yt_env, yt, vc_ls_text):
    cli = yt("vc", "ls")
    magic = ipython("%yt vc ls")
    assert magic.returncode == 0, magic.stderr
    assert magic.stdout == cli.stdout == vc_ls_text
    commented = ipython("%yt vc ls   # as in a shell: a comment, not arguments")
    assert commented.stdout == cli.stdout, commented.stderr


def test_magic_json_and_errors(yt_env):
    result = ipython("%yt whoami --json", JUPYTERHUB_API_TOKEN="bob-token")
    assert json.loads(result.stdout)["name"] == "bob"
    result = ipython("%yt vc show vision", "print('still here')", JUPYTERHUB_API_TOKEN="bob-token")
    assert result.stdout == "still here\n"
    assert "yt: bob is not a member of VC vision" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("line", ["vc frobnicate", "--help", "vc ls 'unclosed"])
def test_magic_usage_never_raises(yt_env, line):
    result = ipython(f"%yt {line}", "print('still here')")
    assert result.stdout.endswith("still here\n")
    assert "Traceback" not in result.stderr + result.stdout
